package redis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/july/template/adapters/redis"
	"github.com/july/template/contracttests"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
)

// The traced client is the one the apps use, so it must keep the guard's
// contract: the suite runs through it.
func TestTracedGuard(t *testing.T) {
	t.Parallel()
	contracttests.RunGuard(t, func(t *testing.T) contracttests.GuardFixture {
		r := testinfra.NewRedis(t)
		g, err := redis.NewGuard(redis.Traced(r.Client), redis.GuardConfig{Prefix: r.Prefix + "guard:", Timeout: liveTimeout})
		require.NoError(t, err)
		return contracttests.GuardFixture{
			Guard: g,
			Outage: func(t *testing.T, _ ports.Guard) (ports.Guard, func()) {
				down, err := redis.NewGuard(redis.Traced(unreachableClient(t)), redis.GuardConfig{Prefix: r.Prefix + "guard:", Timeout: downTimeout})
				require.NoError(t, err)
				return down, func() {}
			},
		}
	})
}

// Under a recording span each command records a client span named after
// the command, with no key, argument or value in any attribute; without a
// span nothing is recorded; a failure is marked by class only.
func TestTracedClientSpans(t *testing.T) {
	t.Parallel()
	r := testinfra.NewRedis(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	client := redis.Traced(r.Client)
	cache, err := redis.NewConfigCache(client, redis.CacheConfig{Prefix: r.Prefix + "cfg:"})
	require.NoError(t, err)
	guard, err := redis.NewGuard(client, redis.GuardConfig{Prefix: r.Prefix + "guard:"})
	require.NoError(t, err)

	const secretKey, secretOwner = "payment.secret_key_name", "owner-token-9f8e7d"
	stored := sysconfig.Stored{Key: secretKey, Value: "secret-value-123", Type: sysconfig.TypeString, Version: 1, UpdatedAt: time.Now()}

	// No span in the context: nothing recorded.
	_, err = cache.Fill(t.Context(), stored, time.Minute)
	require.NoError(t, err)
	require.Empty(t, exp.GetSpans(), "a call without a parent span must record nothing")

	ctx, root := tp.Tracer("test").Start(t.Context(), "request")
	_, err = cache.Get(ctx, secretKey)
	require.NoError(t, err)
	ok, err := guard.Acquire(ctx, "scope-"+secretOwner, secretOwner, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	released, err := guard.Release(ctx, "scope-"+secretOwner, secretOwner)
	require.NoError(t, err)
	require.True(t, released)
	root.End()

	spans := exp.GetSpans()
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
		if s.Name == "request" {
			continue
		}
		require.Equal(t, root.SpanContext().SpanID(), s.Parent.SpanID(), "%s is a child of the request span", s.Name)
		for _, a := range s.Attributes {
			v := a.Value.String()
			for _, leak := range []string{secretKey, secretOwner, "secret-value-123", r.Prefix} {
				require.NotContains(t, v, leak, "span %s attribute %s leaks %q", s.Name, a.Key, leak)
			}
		}
	}
	require.Contains(t, names, "GET")
	require.Contains(t, names, "SET")
	require.True(t, strings.Contains(strings.Join(names, ","), "EVAL"), "the guard's release script is traced: %v", names)

	// Outage: the span is marked failed, by class.
	exp.Reset()
	downCache, err := redis.NewConfigCache(redis.Traced(unreachableClient(t)), redis.CacheConfig{Prefix: r.Prefix + "cfg:", Timeout: downTimeout})
	require.NoError(t, err)
	ctx, root = tp.Tracer("test").Start(t.Context(), "request")
	_, err = downCache.Get(ctx, secretKey)
	require.Error(t, err)
	root.End()
	var failed bool
	for _, s := range exp.GetSpans() {
		if s.Name == "GET" {
			failed = s.Status.Code == codes.Error
			require.NotContains(t, s.Status.Description, secretKey)
		}
	}
	require.True(t, failed, "the GET during an outage is marked failed")
}
