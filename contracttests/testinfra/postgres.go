package testinfra

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

// DB is one test's private Postgres database.
type DB struct {
	// Name is the database name (t_<random>).
	Name string
	// URL connects to this database only; hand it to binaries under test.
	URL string
	// Bun is a pool on this database, closed at cleanup.
	Bun *bun.DB
}

// DBOpts tunes NewDB. The zero value gives an empty database.
type DBOpts struct {
	// Migrate, when set, runs on the new database before NewDB returns
	// (pass postgres.Migrate). It keeps the harness free of adapter imports.
	Migrate func(ctx context.Context, db *bun.DB) error
}

var (
	adminOnce sync.Once
	admin     *sql.DB
	adminErr  error
)

func adminDB(t testing.TB) (*sql.DB, string) {
	t.Helper()
	base0 := resolvePostgres(t)
	adminOnce.Do(func() {
		admin, adminErr = sql.Open("pgx", base0)
		if adminErr == nil {
			admin.SetMaxOpenConns(4)
			adminErr = admin.PingContext(context.Background())
		}
	})
	if adminErr != nil {
		t.Fatalf("connect to %s (%s): %v. Fix: make sure Postgres answers there and the role may CREATE DATABASE", EnvDatabaseURL, redactURL(base0), adminErr)
	}
	return admin, base0
}

// expectServer checks the server at url against EnvPostgresVersion
// (major) and EnvPostgresTimeZone when they are set.
func expectServer(url, major, zone string) error {
	if major == "" && zone == "" {
		return nil
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	var num int
	var tz string
	if err := db.QueryRowContext(context.Background(), `SELECT current_setting('server_version_num')::int, current_setting('TimeZone')`).Scan(&num, &tz); err != nil {
		return fmt.Errorf("read the version of the server at %s (%s): %w", EnvDatabaseURL, redactURL(url), err)
	}
	if major != "" && fmt.Sprint(num/10000) != major {
		return fmt.Errorf("%s=%s but the server at %s (%s) is version %d: point %s at a PostgreSQL %s server, or unset %s",
			EnvPostgresVersion, major, EnvDatabaseURL, redactURL(url), num, EnvDatabaseURL, major, EnvPostgresVersion)
	}
	if zone != "" && tz != zone {
		return fmt.Errorf("%s=%s but the server at %s (%s) has timezone %s: start it with -c timezone=%s, or unset %s",
			EnvPostgresTimeZone, zone, EnvDatabaseURL, redactURL(url), tz, zone, EnvPostgresTimeZone)
	}
	return nil
}

// NewDB creates a fresh database for t and drops it (forcibly, with its
// connections) when t ends.
func NewDB(t testing.TB, opts DBOpts) *DB {
	t.Helper()
	adm, base := adminDB(t)
	name := "t_" + randomHex(8)
	ctx := context.Background()
	if _, err := adm.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if _, err := adm.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})

	dbURL, err := withDatabase(base, name)
	if err != nil {
		t.Fatalf("build test database url: %v", err)
	}
	bdb, err := OpenBun(dbURL)
	if err != nil {
		t.Fatalf("open test database %s: %v", name, err)
	}
	t.Cleanup(func() { _ = bdb.Close() })

	if opts.Migrate != nil {
		if err := opts.Migrate(ctx, bdb); err != nil {
			t.Fatalf("migrate test database %s: %v", name, err)
		}
	}
	return &DB{Name: name, URL: dbURL, Bun: bdb}
}

// OpenBun opens a bun DB over the pgx stdlib driver.
func OpenBun(dsn string) (*bun.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	sqldb := stdlib.OpenDB(*cfg)
	sqldb.SetMaxOpenConns(16)
	if err := sqldb.PingContext(context.Background()); err != nil {
		_ = sqldb.Close()
		return nil, err
	}
	return bun.NewDB(sqldb, pgdialect.New()), nil
}

func withDatabase(base, name string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "<unparsable url>"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return strings.ToLower(hex.EncodeToString(b))
}
