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
	"strings"
	"sync"
	"testing"
)

// Env variable names read by the harness.
const (
	EnvDatabaseURL = "TEST_DATABASE_URL"
	EnvRedisURL    = "TEST_REDIS_URL"
)

var (
	resolveOnce sync.Once
	resolved    endpoints
	resolveErr  error
)

type endpoints struct {
	databaseURL string // admin URL: must be allowed to CREATE DATABASE
	redisURL    string
}

// resolve returns the endpoints for this process, starting containers if needed.
func resolve(t testing.TB) endpoints {
	t.Helper()
	resolveOnce.Do(func() {
		resolved.databaseURL = os.Getenv(EnvDatabaseURL)
		resolved.redisURL = os.Getenv(EnvRedisURL)
		if resolved.databaseURL != "" && resolved.redisURL != "" {
			return
		}
		var missing []string
		if resolved.databaseURL == "" {
			missing = append(missing, EnvDatabaseURL)
		}
		if resolved.redisURL == "" {
			missing = append(missing, EnvRedisURL)
		}
		if err := startContainers(&resolved); err != nil {
			resolveErr = fmt.Errorf("no test infrastructure: %s not set and Docker is not usable (%v).\n"+
				"Fix: export %s=postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable and %s=redis://127.0.0.1:6379/0 "+
				"(a role that may CREATE DATABASE), or start a Docker engine, or run `make test` which does both",
				strings.Join(missing, " and "), err, EnvDatabaseURL, EnvRedisURL)
		}
	})
	if resolveErr != nil {
		t.Fatal(resolveErr)
	}
	return resolved
}
