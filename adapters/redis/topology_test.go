package redis_test

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/redis"
	"github.com/july/template/contracttests"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/redisurl"
	"github.com/july/template/core/sysconfig"
	"github.com/july/template/internal/redistopo"
)

// The config cache and the guard keep their contracts on a Redis Cluster
// and behind Sentinel, through the client REDIS_URL configures. In a
// cluster the cache's row and its invalidation marker share a hash tag,
// so Fill's and Invalidate's scripts touch one slot.
func TestTopologies(t *testing.T) {
	t.Parallel()
	for name, start := range map[string]func(testing.TB) *redistopo.Topology{
		"Cluster":  redistopo.Cluster,
		"Sentinel": redistopo.Sentinel,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			topo := start(t)
			parsed, err := redisurl.Parse(topo.URL)
			require.NoError(t, err)
			client := redis.Traced(topo.Client(t, redis.ClientOption(parsed)))
			prefix := func() string {
				b := make([]byte, 6)
				_, _ = rand.Read(b)
				return "t:" + hex.EncodeToString(b) + ":"
			}
			t.Run("ConfigCache", func(t *testing.T) {
				contracttests.RunConfigCache(t, contracttests.ConfigCacheCaps{Expiry: true}, func(t *testing.T) contracttests.ConfigCacheFixture {
					p := prefix()
					cache, err := redis.NewConfigCache(client, redis.CacheConfig{Prefix: p, Timeout: liveTimeout})
					require.NoError(t, err)
					return contracttests.ConfigCacheFixture{Cache: cache, Outage: func(t *testing.T, _ ports.ConfigCache) (ports.ConfigCache, func()) {
						down, err := redis.NewConfigCache(unreachableClient(t), redis.CacheConfig{Prefix: p, Timeout: downTimeout})
						require.NoError(t, err)
						return down, func() {}
					}}
				})
			})
			t.Run("Guard", func(t *testing.T) {
				contracttests.RunGuard(t, func(t *testing.T) contracttests.GuardFixture {
					p := prefix()
					g, err := redis.NewGuard(client, redis.GuardConfig{Prefix: p, Timeout: liveTimeout})
					require.NoError(t, err)
					return contracttests.GuardFixture{Guard: g, Outage: func(t *testing.T, _ ports.Guard) (ports.Guard, func()) {
						down, err := redis.NewGuard(unreachableClient(t), redis.GuardConfig{Prefix: p, Timeout: downTimeout})
						require.NoError(t, err)
						return down, func() {}
					}}
				})
			})
			t.Run("WindowCounter", func(t *testing.T) {
				wc, err := redis.NewWindowCounter(client, prefix())
				require.NoError(t, err)
				_, _, err = wc.Add(t.Context(), "login:user-1", 1, time.Minute)
				require.NoError(t, err)
				n, _, err := wc.Add(t.Context(), "login:user-1", 2, time.Minute)
				require.NoError(t, err)
				require.EqualValues(t, 3, n)
			})
		})
	}
}

// A Sentinel failover moves the master; the same client follows it: a
// config fill written before the switch is read from the new master, and
// writes go on after it.
func TestSentinelFailoverIsFollowed(t *testing.T) {
	testinfra.Scenario(t)
	t.Parallel()
	topo := redistopo.Sentinel(t)
	parsed, err := redisurl.Parse(topo.URL)
	require.NoError(t, err)
	client := topo.Client(t, redis.ClientOption(parsed))
	cache, err := redis.NewConfigCache(client, redis.CacheConfig{Prefix: "t:failover:"})
	require.NoError(t, err)
	stored := sysconfig.Stored{Key: "pay.limit.max", Value: "7", Type: sysconfig.TypeInt, Version: 1, UpdatedAt: time.Now()}
	ok, err := cache.Fill(t.Context(), stored, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	// WAIT makes the fill reach the replica before it is promoted: Redis
	// replication is asynchronous, so without it a failover may drop it.
	require.NoError(t, client.Do(t.Context(), client.B().Wait().Numreplicas(1).Timeout(2000).Build()).Error())

	oldMaster, newMaster := topo.Failover(t)
	require.NotEqual(t, oldMaster, newMaster)

	require.Eventually(t, func() bool {
		got, err := cache.Get(t.Context(), stored.Key)
		return err == nil && got.Value == "7"
	}, 15*time.Second, 50*time.Millisecond, "the client reads the fill from the new master %s", newMaster)
	require.Eventually(t, func() bool {
		return cache.Invalidate(t.Context(), stored.Key, 2, time.Minute) == nil
	}, 15*time.Second, 50*time.Millisecond, "writes reach the new master")
	_, err = cache.Get(t.Context(), stored.Key)
	require.ErrorIs(t, err, ports.ErrNotFound, "the invalidation written after the switch holds")
}
