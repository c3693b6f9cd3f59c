// Package containers starts the Postgres and Redis that tests use in
// containers, with dockertest, when TEST_DATABASE_URL / TEST_REDIS_URL are
// unset. It is a module of its own so that dockertest and the Docker client
// modules stay out of the service's go.mod: only test code that imports this
// module carries them.
//
// Two ways in:
//
//   - in-process: a test package's TestMain calls Run(m), which installs a
//     testinfra.Starter (containers start on first use) and removes the
//     containers after the tests;
//   - around a command: cmd/withcontainers starts both containers, runs
//     `go test ...` (or anything) with the two variables set to them, and
//     removes the containers when the command ends.
//
// The images are the upstream tags postgres:15 and redis:7; where no
// registry is reachable scripts/container-env.sh builds local stand-ins
// under those tags from Debian packages.
package containers

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
	"github.com/redis/rueidis"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"github.com/july/template/contracttests/testinfra"
)

// Images and tags the containers run.
const (
	PostgresImage = "postgres"
	PostgresTag   = "15"
	RedisImage    = "redis"
	RedisTag      = "7"
)

// ttl is a backstop: Docker removes the containers even if the process that
// started them dies before Purge.
const ttl = 30 * 60 // seconds

// Label marks every container this package starts, its value the starting
// process's id, so a leftover can be found (docker ps -a --filter
// label=org.july.template.test) and traced to its process.
const Label = "org.july.template.test"

// Servers are the containers one process started.
type Servers struct {
	pool *dockertest.Pool

	mu        sync.Mutex
	resources []*dockertest.Resource
}

// New connects to the Docker engine (DOCKER_HOST, else the default socket).
func New() (*Servers, error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	if err := pool.Client.Ping(); err != nil {
		return nil, fmt.Errorf("docker engine does not answer (set DOCKER_HOST, or run scripts/container-env.sh): %w", err)
	}
	pool.MaxWait = 90 * time.Second
	return &Servers{pool: pool}, nil
}

func (s *Servers) run(opts *dockertest.RunOptions, port string) (*dockertest.Resource, string, error) {
	opts.Labels = map[string]string{Label: strconv.Itoa(os.Getpid())}
	opts.PortBindings = map[dc.Port][]dc.PortBinding{dc.Port(port): {{HostIP: "127.0.0.1"}}}
	res, err := s.pool.RunWithOptions(opts, func(hc *dc.HostConfig) {
		hc.AutoRemove = false
		hc.RestartPolicy = dc.RestartPolicy{Name: "no"}
	})
	if err != nil {
		return nil, "", fmt.Errorf("start %s:%s container: %w (is the image there? scripts/container-env.sh images builds it)", opts.Repository, opts.Tag, err)
	}
	s.mu.Lock()
	s.resources = append(s.resources, res)
	s.mu.Unlock()
	_ = res.Expire(ttl)
	return res, res.GetHostPort(port), nil
}

// Postgres starts a Postgres 15 container and returns an admin URL (user
// postgres, trusted, may CREATE DATABASE) once it answers. Durability is off
// (fsync, full-page writes): the data is thrown away with the container.
func (s *Servers) Postgres() (string, error) {
	_, hostPort, err := s.run(&dockertest.RunOptions{
		Repository: PostgresImage, Tag: PostgresTag,
		Env: []string{"POSTGRES_HOST_AUTH_METHOD=trust"},
		Cmd: []string{"postgres", "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=off", "-c", "max_connections=200"},
	}, "5432/tcp")
	if err != nil {
		return "", err
	}
	url := "postgres://postgres@" + hostPort + "/postgres?sslmode=disable"
	if err := s.pool.Retry(func() error {
		db, err := sql.Open("pgx", url)
		if err != nil {
			return err
		}
		defer db.Close()
		return db.Ping()
	}); err != nil {
		return "", fmt.Errorf("postgres container never became ready on %s: %w", hostPort, err)
	}
	return url, nil
}

// Redis starts a Redis 7 container and returns its URL once it answers PING.
func (s *Servers) Redis() (string, error) {
	_, hostPort, err := s.run(&dockertest.RunOptions{Repository: RedisImage, Tag: RedisTag}, "6379/tcp")
	if err != nil {
		return "", err
	}
	url := "redis://" + hostPort + "/0"
	if err := s.pool.Retry(func() error {
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
		return "", fmt.Errorf("redis container never became ready on %s: %w", hostPort, err)
	}
	return url, nil
}

// Start is a testinfra.Starter: a container for the variable env names.
func (s *Servers) Start(env string) (string, error) {
	switch env {
	case testinfra.EnvDatabaseURL:
		return s.Postgres()
	case testinfra.EnvRedisURL:
		return s.Redis()
	}
	return "", fmt.Errorf("containers: no container for %s", env)
}

// Purge removes every container s started, with its volumes.
func (s *Servers) Purge() error {
	s.mu.Lock()
	res := s.resources
	s.resources = nil
	s.mu.Unlock()
	var errs []error
	for _, r := range res {
		if err := s.pool.Purge(r); err != nil {
			errs = append(errs, fmt.Errorf("remove container %s: %w", r.Container.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Count returns how many containers s runs now.
func (s *Servers) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.resources)
}
