// Package testinfra finds real Postgres and Redis for tests and gives every
// test its own isolated slice of them.
//
// Resolution order, once per test process:
//  1. TEST_DATABASE_URL / TEST_REDIS_URL when set;
//  2. otherwise the Starter installed with SetStarter, if any: the
//     github.com/july/template/contracttests/containers module installs one
//     that starts Postgres and Redis containers with dockertest (a separate
//     module, so dockertest and the Docker client never enter this module's
//     go.mod);
//  3. otherwise the test fails with a message naming what to set or start.
//
// It never skips for a missing server; the one skip is Scenario's, in
// `go test -short` (make test), for scenarios make ci runs. Each NewDB call creates a fresh database (migrated when
// asked) that is dropped when the test ends; each NewRedis call hands out a
// unique key prefix whose keys are deleted when the test ends. Nothing here
// runs FLUSHALL, drops a database it did not create, or touches other keys.
package testinfra

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// Env variable names read by the harness.
const (
	EnvDatabaseURL = "TEST_DATABASE_URL"
	EnvRedisURL    = "TEST_REDIS_URL"
	// EnvPostgresVersion and EnvPostgresTimeZone, when set (the version
	// matrix, scripts/pg-matrix.sh, sets them), are the major version and
	// the timezone setting the Postgres server must have: a test process
	// that reaches another server fails instead of passing on the wrong one.
	EnvPostgresVersion  = "TEST_POSTGRES_VERSION"
	EnvPostgresTimeZone = "TEST_POSTGRES_TIMEZONE"
)

// Starter starts (or finds) a server for the variable named env
// (EnvDatabaseURL or EnvRedisURL) and returns its URL; for Postgres a role
// that may CREATE DATABASE. It is called at most once per variable and
// process, and only when that variable is unset.
type Starter func(env string) (url string, err error)

var (
	starterMu sync.Mutex
	starter   Starter
)

// SetStarter installs s for the variables left unset. Call it before the
// first test asks for a database or Redis (from TestMain).
func SetStarter(s Starter) {
	starterMu.Lock()
	defer starterMu.Unlock()
	starter = s
}

// start asks the installed Starter for env's URL.
func start(env string) (string, error) {
	starterMu.Lock()
	s := starter
	starterMu.Unlock()
	if s == nil {
		return "", fmt.Errorf("no Starter installed (github.com/july/template/contracttests/containers installs one)")
	}
	return s(env)
}

var (
	pgOnce, redisOnce sync.Once
	pgURL, redisURL   string
	pgErr, redisErr   error
)

// resolvePostgres returns the admin Postgres URL for this process, starting
// a server through the Starter if the variable is unset.
func resolvePostgres(t testing.TB) string {
	t.Helper()
	pgOnce.Do(func() {
		if pgURL = os.Getenv(EnvDatabaseURL); pgURL == "" {
			if pgURL, pgErr = start(EnvDatabaseURL); pgErr != nil {
				pgErr = missing(EnvDatabaseURL, pgErr)
				return
			}
		}
		pgErr = expectServer(pgURL, os.Getenv(EnvPostgresVersion), os.Getenv(EnvPostgresTimeZone))
	})
	if pgErr != nil {
		t.Fatal(pgErr)
	}
	return pgURL
}

// resolveRedis is resolvePostgres for Redis.
func resolveRedis(t testing.TB) string {
	t.Helper()
	redisOnce.Do(func() {
		if redisURL = os.Getenv(EnvRedisURL); redisURL != "" {
			return
		}
		if redisURL, redisErr = start(EnvRedisURL); redisErr != nil {
			redisErr = missing(EnvRedisURL, redisErr)
		}
	})
	if redisErr != nil {
		t.Fatal(redisErr)
	}
	return redisURL
}

func missing(name string, err error) error {
	return fmt.Errorf("no test infrastructure: %s is not set and no server could be started (%v).\n"+
		"Fix: export %s=postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable (a role that may CREATE DATABASE) "+
		"and %s=redis://127.0.0.1:6379/0, or run `make test`, which starts local servers and sets both, "+
		"or run the tests in containers: `make test-containers`",
		name, err, EnvDatabaseURL, EnvRedisURL)
}

// Scenario marks a failover, loss or crash scenario (HA topologies, killed
// processes, lost queues, Asynq's 30 s lease): minutes of waiting that the
// inner loop leaves out. make test runs `go test -short`, which skips it;
// make ci runs every test without -short, so CI never skips one.
func Scenario(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("failover/loss/crash scenario: make ci runs it (go test without -short)")
	}
}
