package redis_test

import (
	"testing"

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
		g, err := redis.NewGuard(r.Client, redis.GuardConfig{Prefix: r.Prefix + "guard:", Timeout: liveTimeout})
		require.NoError(t, err)
		return contracttests.GuardFixture{
			Guard: g,
			Outage: func(t *testing.T, _ ports.Guard) (ports.Guard, func()) {
				down, err := redis.NewGuard(unreachableClient(t), redis.GuardConfig{Prefix: r.Prefix + "guard:", Timeout: downTimeout})
				require.NoError(t, err)
				return down, func() {}
			},
		}
	})
}
