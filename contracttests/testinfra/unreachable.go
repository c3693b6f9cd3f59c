package testinfra

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/rueidis"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

// UnreachableAddr is a local port nothing listens on: a connection to it
// is refused at once, as during an outage of the service behind it.
const UnreachableAddr = "127.0.0.1:1"

// UnreachableTimeout bounds a connection attempt to UnreachableAddr.
const UnreachableTimeout = 2 * time.Second

// UnreachableDB returns a bun.DB over the pgx stdlib driver whose server
// cannot be reached, for the outage cases of the contract suites. It is
// built without the ping postgres.Open does (that ping would fail), so
// every query fails instead. It is closed when t ends.
func UnreachableDB(t testing.TB) *bun.DB {
	t.Helper()
	dsn := fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&connect_timeout=%d", UnreachableAddr, int(UnreachableTimeout.Seconds()))
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("parse unreachable postgres url: %v", err)
	}
	db := bun.NewDB(stdlib.OpenDB(*cfg), pgdialect.New())
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// UnreachableRedis returns a rueidis client on UnreachableAddr. With
// ForceSingleClient rueidis hands the client back although its first dial
// fails; every command then fails as in a Redis outage. It is closed when t
// ends.
func UnreachableRedis(t testing.TB) rueidis.Client {
	t.Helper()
	c, _ := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:       []string{UnreachableAddr},
		ForceSingleClient: true,
		DisableCache:      true,
		Dialer:            net.Dialer{Timeout: UnreachableTimeout},
	})
	if c == nil {
		t.Fatal("rueidis returned no client for an unreachable address although ForceSingleClient is set")
	}
	t.Cleanup(c.Close)
	return c
}
