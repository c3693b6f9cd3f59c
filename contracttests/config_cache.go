package contracttests

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
)

// ConfigCacheCaps lists optional ConfigCache test hooks. A case whose hook
// the adapter cannot offer is skipped with the reason, never silently. The
// outage hook is not optional: it is ConfigCacheFixture.Outage.
type ConfigCacheCaps struct {
	// Expiry is true when entries and markers can be observed to expire,
	// either through ConfigCacheFixture.Advance or by waiting a short real
	// ttl (when Advance is nil).
	Expiry bool
}

// ConfigCacheFixture is one isolated ConfigCache plus its test hooks.
type ConfigCacheFixture struct {
	// Cache is the cache under test; it sees no other test's keys.
	Cache ports.ConfigCache
	// Advance moves the cache's clock forward; nil when it runs on real
	// time (the suite then uses short ttls and waits).
	Advance func(d time.Duration)
	// Outage takes Cache's backing store away (see Outage). Required: the
	// outage case fails without it.
	Outage Outage[ports.ConfigCache]
}

// RunConfigCache checks a ConfigCache against the contract documented on
// ports.ConfigCache. newCache must return a fresh, empty cache per call.
func RunConfigCache(t *testing.T, caps ConfigCacheCaps, newCache func(t *testing.T) ConfigCacheFixture) {
	t.Helper()
	const ttl = time.Minute

	t.Run("Get/Miss", func(t *testing.T) {
		t.Parallel()
		c := newCache(t).Cache

		_, err := c.Get(t.Context(), "suite.cache.missing")
		require.ErrorIs(t, err, ports.ErrNotFound, "rule: Get of an uncached key returns ErrNotFound")
		require.NotErrorIs(t, err, ports.ErrUnavailable, "rule: a miss is not an outage")
	})

	t.Run("Fill/ThenHit", func(t *testing.T) {
		t.Parallel()
		c := newCache(t).Cache
		row := cachedRow("suite.cache.hit", 3, "hello ' \" ? world")

		stored, err := c.Fill(t.Context(), row, ttl)
		require.NoError(t, err)
		require.True(t, stored, "rule: Fill into an empty cache stores the row")
		requireStored(t, row, cacheGet(t, c, row.Key), "rule: Get returns the filled row unchanged")

		newer := cachedRow(row.Key, 4, "newer")
		stored, err = c.Fill(t.Context(), newer, ttl)
		require.NoError(t, err)
		require.True(t, stored, "rule: Fill with a newer version replaces the cached row")
		requireStored(t, newer, cacheGet(t, c, row.Key), "rule: Get returns the newest filled row")
	})

	t.Run("Fill/RefusesOlderVersionThanCached", func(t *testing.T) {
		t.Parallel()
		c := newCache(t).Cache
		v2 := cachedRow("suite.cache.older", 2, "two")
		mustFill(t, c, v2, ttl)

		stored, err := c.Fill(t.Context(), cachedRow(v2.Key, 1, "one"), ttl)
		require.NoError(t, err)
		require.False(t, stored, "rule: a stale refill must never overwrite a newer version (cached v2, filled v1)")
		requireStored(t, v2, cacheGet(t, c, v2.Key), "rule: a stale refill must never overwrite a newer version")
	})

	t.Run("Invalidate/DropsAndBlocksStaleRefill", func(t *testing.T) {
		t.Parallel()
		c := newCache(t).Cache
		key := "suite.cache.invalidate"
		mustFill(t, c, cachedRow(key, 1, "one"), ttl)

		require.NoError(t, c.Invalidate(t.Context(), key, 2, ttl))
		_, err := c.Get(t.Context(), key)
		require.ErrorIs(t, err, ports.ErrNotFound, "rule: Invalidate drops the cached row")

		stored, err := c.Fill(t.Context(), cachedRow(key, 1, "one"), ttl)
		require.NoError(t, err)
		require.False(t, stored, "rule: a stale refill must never overwrite a newer version (marker v2, filled v1)")
		_, err = c.Get(t.Context(), key)
		require.ErrorIs(t, err, ports.ErrNotFound, "rule: a refused refill leaves the key uncached")

		require.NoError(t, c.Invalidate(t.Context(), key, 1, ttl))
		stored, err = c.Fill(t.Context(), cachedRow(key, 1, "one"), ttl)
		require.NoError(t, err)
		require.False(t, stored, "rule: a lower Invalidate never lowers the marker (marker v2, invalidated v1, filled v1)")

		v2 := cachedRow(key, 2, "two")
		stored, err = c.Fill(t.Context(), v2, ttl)
		require.NoError(t, err)
		require.True(t, stored, "rule: the marker's own version may be filled")
		requireStored(t, v2, cacheGet(t, c, key), "rule: Get returns the row filled after invalidation")
	})

	t.Run("Fill/SameVersionRefill", func(t *testing.T) {
		t.Parallel()
		c := newCache(t).Cache
		v2 := cachedRow("suite.cache.same", 2, "two")
		mustFill(t, c, v2, ttl)

		_, err := c.Fill(t.Context(), v2, ttl)
		require.NoError(t, err, "rule: refilling the cached version is not an error")
		requireStored(t, v2, cacheGet(t, c, v2.Key), "rule: a refill of the same version leaves that version cached")
	})

	// A reader that read v1 fills while an update of v2 invalidates: in
	// either order the cache must not end with v1 (Fill's check and write
	// are one atomic step). Many rounds, so a check-then-write adapter hits
	// the window.
	t.Run("Concurrent/FillVsInvalidateNeverLeavesStale", func(t *testing.T) {
		t.Parallel()
		c := newCache(t).Cache
		for round := range 1000 {
			key := fmt.Sprintf("suite.cache.race.%d", round)
			start := make(chan struct{})
			var wg sync.WaitGroup
			errs := make(chan error, 2)
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				_, err := c.Fill(t.Context(), cachedRow(key, 1, "one"), ttl)
				errs <- err
			}()
			go func() {
				defer wg.Done()
				<-start
				// Land at varying offsets inside a Fill in flight.
				time.Sleep(time.Duration(round%5) * 200 * time.Microsecond)
				errs <- c.Invalidate(t.Context(), key, 2, ttl)
			}()
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			got, err := c.Get(t.Context(), key)
			if err == nil {
				require.NotEqual(t, int64(1), got.Version,
					"rule: a stale refill must never overwrite a newer version (round %d: concurrent Fill(v1) and Invalidate(min 2) left v1 cached)", round)
			} else {
				require.ErrorIs(t, err, ports.ErrNotFound)
			}
		}
	})

	t.Run("Fill/TTLExpires", func(t *testing.T) {
		t.Parallel()
		if !caps.Expiry {
			t.Skip("adapter cannot show expiry in a test (ConfigCacheCaps.Expiry is false)")
		}
		fx := newCache(t)
		c, short := fx.Cache, 300*time.Millisecond
		row := cachedRow("suite.cache.ttl", 1, "one")
		mustFill(t, c, row, short)
		require.NoError(t, c.Invalidate(t.Context(), "suite.cache.marker", 9, short))

		expired := func() bool {
			_, err := c.Get(t.Context(), row.Key)
			return errors.Is(err, ports.ErrNotFound)
		}
		markerGone := func() bool { // a refused Fill changes nothing, so polling is safe
			stored, err := c.Fill(t.Context(), cachedRow("suite.cache.marker", 1, "one"), ttl)
			return err == nil && stored
		}
		if fx.Advance != nil {
			requireStored(t, row, cacheGet(t, c, row.Key), "rule: a row is cached until its ttl passes")
			fx.Advance(short + time.Millisecond)
			require.True(t, expired(), "rule: a filled row expires after its ttl")
			require.True(t, markerGone(), "rule: an invalidation marker is remembered only for its ttl")
			return
		}
		require.Eventually(t, expired, 5*time.Second, 20*time.Millisecond, "rule: a filled row expires after its ttl (%s)", short)
		require.Eventually(t, markerGone, 5*time.Second, 20*time.Millisecond, "rule: an invalidation marker is remembered only for its ttl (%s)", short)
	})

	t.Run("Outage/EveryMethodUnavailableAndNothingChanges", func(t *testing.T) {
		t.Parallel()
		fx := newCache(t)
		requireOutageHook(t, fx.Outage == nil, "ConfigCacheFixture.Outage")
		held := cachedRow("suite.cache.held", 1, "one")
		mustFill(t, fx.Cache, held, ttl)

		down, restore := fx.Outage(t, fx.Cache)
		row := cachedRow("suite.cache.down", 1, "one")
		requireUnavailable(t, map[string]outageCall{
			"Get": func(ctx context.Context) error {
				_, err := down.Get(ctx, held.Key)
				return err
			},
			"Fill": func(ctx context.Context) error {
				_, err := down.Fill(ctx, row, ttl)
				return err
			},
			"Invalidate": func(ctx context.Context) error {
				return down.Invalidate(ctx, held.Key, 2, ttl)
			},
		})

		restore()
		requireStored(t, held, cacheGet(t, fx.Cache, held.Key), "after the outage the cached row is still cached: "+OutageRule)
		_, err := fx.Cache.Get(t.Context(), row.Key)
		require.ErrorIs(t, err, ports.ErrNotFound, "a Fill during the outage cached %s: %s", row.Key, OutageRule)
		mustFill(t, fx.Cache, row, ttl) // the healthy cache is unaffected
		requireStored(t, row, cacheGet(t, fx.Cache, row.Key), "rule: an outage of one cache does not affect another")
	})
}

// cachedRow is a config row at version v.
func cachedRow(key string, v int64, value string) sysconfig.Stored {
	return sysconfig.Stored{
		Key: key, Value: value, Type: sysconfig.TypeString, Module: "suite", Description: "测试配置",
		Version: v, UpdatedAt: cfgT0.Add(time.Duration(v) * time.Second), UpdatedBy: "admin-1",
	}
}

func cacheGet(t *testing.T, c ports.ConfigCache, key string) sysconfig.Stored {
	t.Helper()
	s, err := c.Get(t.Context(), key)
	require.NoError(t, err, "get cached %s", key)
	return s
}

func mustFill(t *testing.T, c ports.ConfigCache, s sysconfig.Stored, ttl time.Duration) {
	t.Helper()
	stored, err := c.Fill(t.Context(), s, ttl)
	require.NoError(t, err, "fill %s v%d", s.Key, s.Version)
	require.True(t, stored, "fill %s v%d: rule: Fill stores a row when nothing newer is known", s.Key, s.Version)
}
