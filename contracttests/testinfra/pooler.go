package testinfra

import (
	"net/url"
	"os"
	"testing"
)

// EnvPgBouncerURL names a PgBouncer in transaction mode in front of
// TEST_DATABASE_URL's server that forwards every database name to it
// (scripts/pgbouncer.sh run sets it; make test-pooler runs the pooler
// tests, built with -tags pooler, under it).
const EnvPgBouncerURL = "TEST_PGBOUNCER_URL"

// PoolerURL returns dbURL (a database of NewDB) reached through the
// PgBouncer of EnvPgBouncerURL: the same URL with the pooler's host and
// port. It fails the test, saying how to start one, when the variable is
// unset.
func PoolerURL(t testing.TB, dbURL string) string {
	t.Helper()
	p := os.Getenv(EnvPgBouncerURL)
	if p == "" {
		t.Fatalf("%s is not set: run the pooler tests with `make test-pooler`, or under "+
			"`scripts/pgbouncer.sh run -- go test -tags pooler ...`, which starts a PgBouncer in transaction mode and sets it", EnvPgBouncerURL)
	}
	pu, err := url.Parse(p)
	if err != nil {
		t.Fatalf("%s: %v", EnvPgBouncerURL, err)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("parse database url: %v", err)
	}
	u.Host = pu.Host
	return u.String()
}
