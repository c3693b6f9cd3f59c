package containers_test

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/adapters/redis"
	"github.com/july/template/contracttests"
	"github.com/july/template/contracttests/containers"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/ports"
)

// TestMain is what a downstream team writes to run the suites against
// containers: containers.Run installs the starter and removes the
// containers afterwards. Here it also fails the run if one is left.
func TestMain(m *testing.M) {
	for _, v := range []string{testinfra.EnvDatabaseURL, testinfra.EnvRedisURL} {
		if os.Getenv(v) != "" {
			fmt.Fprintf(os.Stderr, "%s is set; these tests prove the container path and need it unset (env -u %s)\n", v, v)
			os.Exit(2)
		}
	}
	code := containers.Run(m)
	if left, err := labelled(); err != nil || len(left) > 0 {
		fmt.Fprintf(os.Stderr, "containers left behind after Run: %v (err %v)\n", left, err)
		code = 1
	}
	os.Exit(code)
}

// ownLabel selects the containers this test process started (other
// processes, such as cmd/withcontainers, may run theirs meanwhile).
func ownLabel() string { return containers.Label + "=" + strconv.Itoa(os.Getpid()) }

func labelled() ([]string, error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, err
	}
	cs, err := pool.Client.ListContainers(dc.ListContainersOptions{All: true, Filters: map[string][]string{"label": {ownLabel()}}})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, c := range cs {
		names = append(names, fmt.Sprint(c.Names))
	}
	return names, nil
}

// publishedBy returns the labelled container whose published port is the
// port of rawURL, or fails t.
func publishedBy(t *testing.T, rawURL, image string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	pool, err := dockertest.NewPool("")
	require.NoError(t, err)
	cs, err := pool.Client.ListContainers(dc.ListContainersOptions{Filters: map[string][]string{"label": {ownLabel()}}})
	require.NoError(t, err)
	for _, c := range cs {
		for _, p := range c.Ports {
			if fmt.Sprint(p.PublicPort) == u.Port() {
				require.Equal(t, image, c.Image, "container behind %s", rawURL)
				return
			}
		}
	}
	t.Fatalf("%s is not served by a container this package started (%d labelled containers)", rawURL, len(cs))
}

func TestServersAreContainers(t *testing.T) {
	t.Parallel()
	db := testinfra.NewDB(t, testinfra.DBOpts{})
	publishedBy(t, db.URL, containers.PostgresImage+":"+containers.PostgresTag)
	var version string
	require.NoError(t, db.Bun.QueryRowContext(t.Context(), "SHOW server_version_num").Scan(&version))
	require.Regexp(t, `^15\d{4}$`, version, "Postgres major version")

	r := testinfra.NewRedis(t)
	publishedBy(t, r.URL, containers.RedisImage+":"+containers.RedisTag)
	info, err := r.Client.Do(t.Context(), r.Client.B().Info().Section("server").Build()).ToString()
	require.NoError(t, err)
	require.Contains(t, info, "redis_version:7.", "Redis major version")
}

// The suites run in-process against the containers, as in a downstream
// module that imports them.
func TestOutboxStoreSuite(t *testing.T) {
	t.Parallel()
	contracttests.RunOutboxStore(t, contracttests.OutboxCaps{
		Outage: func(t *testing.T, _ ports.OutboxStore) (ports.OutboxStore, func()) {
			down, err := pgoutbox.NewStore(testinfra.UnreachableDB(t), pgoutbox.Config{})
			require.NoError(t, err)
			return down, func() {}
		},
	}, func(t *testing.T) ports.OutboxStore {
		store, err := pgoutbox.NewStore(testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun, pgoutbox.Config{})
		require.NoError(t, err)
		return store
	})
}

func TestGuardSuite(t *testing.T) {
	t.Parallel()
	contracttests.RunGuard(t, func(t *testing.T) contracttests.GuardFixture {
		r := testinfra.NewRedis(t)
		// The production budget (200 ms) is a latency bound; the suite
		// checks semantics, and an acquire that timed out on a loaded
		// machine still ran on the server and held the key for its ttl.
		g, err := redis.NewGuard(r.Client, redis.GuardConfig{Prefix: r.Prefix + "guard:", Timeout: 5 * time.Second})
		require.NoError(t, err)
		return contracttests.GuardFixture{
			Guard: g,
			Outage: func(t *testing.T, _ ports.Guard) (ports.Guard, func()) {
				down, err := redis.NewGuard(testinfra.UnreachableRedis(t), redis.GuardConfig{Prefix: r.Prefix + "guard:"})
				require.NoError(t, err)
				return down, func() {}
			},
		}
	})
}
