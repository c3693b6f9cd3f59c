// Package testinfra finds real Postgres and Redis for tests and gives every
// test its own isolated slice of them.
//
// Resolution order, once per test process:
//  1. TEST_DATABASE_URL / TEST_REDIS_URL when set;
//  2. otherwise dockertest starts postgres and redis containers when a Docker
//     engine answers;
//  3. otherwise the test fails with a message naming what to set or start.
//
// It never skips. Each NewDB call creates a fresh database (migrated when
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
)

var (
	pgOnce, redisOnce sync.Once
	pgURL, redisURL   string
	pgErr, redisErr   error
)

type endpoints struct {
	databaseURL string // admin URL: must be allowed to CREATE DATABASE
	redisURL    string
}

// resolvePostgres returns the admin Postgres URL for this process, starting
// a container if the variable is unset and Docker answers.
func resolvePostgres(t testing.TB) string {
	t.Helper()
	pgOnce.Do(func() {
		if pgURL = os.Getenv(EnvDatabaseURL); pgURL != "" {
			return
		}
		var ep endpoints
		ep.redisURL = "unused"
		if err := startContainers(&ep); err != nil {
			pgErr = missing(EnvDatabaseURL, err)
			return
		}
		pgURL = ep.databaseURL
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
		var ep endpoints
		ep.databaseURL = "unused"
		if err := startContainers(&ep); err != nil {
			redisErr = missing(EnvRedisURL, err)
			return
		}
		redisURL = ep.redisURL
	})
	if redisErr != nil {
		t.Fatal(redisErr)
	}
	return redisURL
}

func missing(name string, err error) error {
	return fmt.Errorf("no test infrastructure: %s is not set and Docker is not usable (%v).\n"+
		"Fix: export %s=postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable (a role that may CREATE DATABASE) "+
		"and %s=redis://127.0.0.1:6379/0, or start a Docker engine, or run `make test`, which starts local servers and sets both",
		name, err, EnvDatabaseURL, EnvRedisURL)
}
