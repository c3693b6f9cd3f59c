package redis_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/redis"
	"github.com/july/template/contracttests"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
)

func TestConfigCache(t *testing.T) {
	t.Parallel()

	caps := contracttests.ConfigCacheCaps{Expiry: true}
	contracttests.RunConfigCache(t, caps, func(t *testing.T) contracttests.ConfigCacheFixture {
		r := testinfra.NewRedis(t)
		cache, err := redis.NewConfigCache(r.Client, redis.CacheConfig{Prefix: r.Prefix, Timeout: liveTimeout})
		require.NoError(t, err)
		return contracttests.ConfigCacheFixture{
			Cache: cache,
			Outage: func(t *testing.T, _ ports.ConfigCache) (ports.ConfigCache, func()) {
				down, err := redis.NewConfigCache(unreachableClient(t), redis.CacheConfig{Prefix: r.Prefix, Timeout: downTimeout})
				require.NoError(t, err)
				return down, func() {}
			},
		}
	})
}

func TestConfigCacheKeysStayUnderPrefix(t *testing.T) {
	t.Parallel()

	r := testinfra.NewRedis(t)
	// About key names, not the request budget: the default 200 ms per call
	// ran out at load 15 in the gate.
	cache, err := redis.NewConfigCache(r.Client, redis.CacheConfig{Prefix: r.Prefix, Timeout: 10 * time.Second})
	require.NoError(t, err)
	_, err = cache.Fill(t.Context(), sysconfig.Stored{Key: "pay.limit.max", Value: "1", Type: sysconfig.TypeInt, Version: 1}, time.Minute)
	require.NoError(t, err)
	require.NoError(t, cache.Invalidate(t.Context(), "pay.limit.other", 2, time.Minute))

	all, err := r.Client.Do(t.Context(), r.Client.B().Keys().Pattern(r.Prefix+"*").Build()).AsStrSlice()
	require.NoError(t, err)
	require.ElementsMatch(t, []string{
		r.Prefix + "v1:{pay.limit.max}",
		r.Prefix + "v1:{pay.limit.other}:min",
	}, all, "every key lives under the configured prefix, in the v1 key format")
}

func TestNewConfigCacheValidates(t *testing.T) {
	t.Parallel()

	_, err := redis.NewConfigCache(nil, redis.CacheConfig{})
	require.Error(t, err, "a nil client is refused")
	_, err = redis.NewConfigCache(unreachableClient(t), redis.CacheConfig{Timeout: -time.Second})
	require.Error(t, err, "a negative timeout is refused")
}
