package testinfra

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"github.com/ory/dockertest/v3"
	"github.com/redis/rueidis"
)

// containerTTL is a backstop: Docker removes the containers even if the test
// process dies before its cleanup.
const containerTTL = 30 * 60 // seconds

// startContainers fills the endpoints that are still empty with dockertest
// containers. Containers live for the whole test process.
func startContainers(ep *endpoints) error {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return fmt.Errorf("docker client: %w", err)
	}
	if err := pool.Client.Ping(); err != nil {
		return fmt.Errorf("docker engine does not answer: %w", err)
	}
	pool.MaxWait = 90 * time.Second

	if ep.databaseURL == "" {
		res, err := pool.Run("postgres", "15-alpine", []string{"POSTGRES_HOST_AUTH_METHOD=trust"})
		if err != nil {
			return fmt.Errorf("start postgres container: %w", err)
		}
		_ = res.Expire(containerTTL)
		url := fmt.Sprintf("postgres://postgres@localhost:%s/postgres?sslmode=disable", res.GetPort("5432/tcp"))
		if err := pool.Retry(func() error {
			db, err := sql.Open("pgx", url)
			if err != nil {
				return err
			}
			defer db.Close()
			return db.Ping()
		}); err != nil {
			return fmt.Errorf("postgres container never became ready: %w", err)
		}
		ep.databaseURL = url
	}
	if ep.redisURL == "" {
		res, err := pool.Run("redis", "7-alpine", nil)
		if err != nil {
			return fmt.Errorf("start redis container: %w", err)
		}
		_ = res.Expire(containerTTL)
		url := fmt.Sprintf("redis://localhost:%s/0", res.GetPort("6379/tcp"))
		if err := pool.Retry(func() error {
			opt, err := rueidis.ParseURL(url)
			if err != nil {
				return err
			}
			opt.DisableCache = true
			c, err := rueidis.NewClient(opt)
			if err != nil {
				return err
			}
			defer c.Close()
			return c.Do(context.Background(), c.B().Ping().Build()).Error()
		}); err != nil {
			return fmt.Errorf("redis container never became ready: %w", err)
		}
		ep.redisURL = url
	}
	return nil
}
