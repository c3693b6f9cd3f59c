package redis_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/redis"
	"github.com/july/template/contracttests"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/ports"
)

func TestGuard(t *testing.T) {
	t.Parallel()

	contracttests.RunGuard(t, func(t *testing.T) contracttests.GuardFixture {
		r := testinfra.NewRedis(t)
		g, err := redis.NewGuard(r.Client, redis.GuardConfig{Prefix: r.Prefix + "guard:"})
		require.NoError(t, err)
		return contracttests.GuardFixture{Guard: g}
	})
}

func TestGuardRedisDown(t *testing.T) {
	t.Parallel()

	g, err := redis.NewGuard(unreachableClient(t), redis.GuardConfig{Timeout: downTimeout})
	require.NoError(t, err)

	_, err = g.Acquire(t.Context(), "job-a", "owner-1", time.Second)
	require.ErrorIs(t, err, ports.ErrUnavailable, "Acquire on a down Redis must wrap ErrUnavailable")
	_, err = g.Release(t.Context(), "job-a", "owner-1")
	require.ErrorIs(t, err, ports.ErrUnavailable, "Release on a down Redis must wrap ErrUnavailable")
}
