//go:build contractbreak

package contracttests_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/contracttests"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
	"github.com/july/template/core/tasks"
)

// TestBroken runs a suite against a deliberately broken adapter, chosen by
// CONTRACTTESTS_BROKEN. It exists only under the contractbreak build tag and
// is expected to FAIL: TestSuitesCatchBrokenAdapters runs it in a child
// process and checks the failure names the rule that was broken.
func TestBroken(t *testing.T) {
	switch os.Getenv("CONTRACTTESTS_BROKEN") {
	case "outbox-complete-without-lease":
		caps := contracttests.OutboxCaps{Outage: func(_ *testing.T, s ports.OutboxStore) (ports.OutboxStore, func()) {
			m := s.(*stealingStore).OutboxStore.(*memory.OutboxStore)
			m.SetDown(true)
			return s, func() { m.SetDown(false) }
		}}
		contracttests.RunOutboxStore(t, caps, func(t *testing.T) ports.OutboxStore {
			return &stealingStore{OutboxStore: memory.NewOutboxStore()}
		})
	case "postgres-outbox-complete-without-lease":
		caps := contracttests.OutboxCaps{Outage: func(t *testing.T, _ ports.OutboxStore) (ports.OutboxStore, func()) {
			down, err := pgoutbox.NewStore(testinfra.UnreachableDB(t), pgoutbox.Config{})
			require.NoError(t, err)
			return &stealingStore{OutboxStore: down}, func() {}
		}}
		contracttests.RunOutboxStore(t, caps, func(t *testing.T) ports.OutboxStore {
			store, err := pgoutbox.NewStore(testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun, pgoutbox.Config{})
			require.NoError(t, err)
			return &stealingStore{OutboxStore: store}
		})
	case "tasks-complete-without-lease":
		caps := contracttests.TaskCaps{Outage: func(_ *testing.T, s ports.TaskStore) (ports.TaskStore, func()) {
			m := s.(*tokenlessTasks).TaskStore.(*memory.TaskStore)
			m.SetDown(true)
			return s, func() { m.SetDown(false) }
		}}
		contracttests.RunTaskStore(t, caps, func(t *testing.T) ports.TaskStore {
			return &tokenlessTasks{TaskStore: memory.NewTaskStore()}
		})
	case "cache-stale-refill":
		contracttests.RunConfigCache(t, contracttests.ConfigCacheCaps{}, func(t *testing.T) contracttests.ConfigCacheFixture {
			c := memory.NewConfigCache(time.Now)
			return contracttests.ConfigCacheFixture{
				Cache: forgetfulCache{c},
				Outage: func(_ *testing.T, live ports.ConfigCache) (ports.ConfigCache, func()) {
					c.SetDown(true)
					return live, func() { c.SetDown(false) }
				},
			}
		})
	case "cache-fill-check-then-write":
		contracttests.RunConfigCache(t, contracttests.ConfigCacheCaps{}, func(t *testing.T) contracttests.ConfigCacheFixture {
			c := &racyCache{rows: map[string]sysconfig.Stored{}, markers: map[string]int64{}}
			return contracttests.ConfigCacheFixture{
				Cache: c,
				Outage: func(_ *testing.T, live ports.ConfigCache) (ports.ConfigCache, func()) {
					c.setDown(true)
					return live, func() { c.setDown(false) }
				},
			}
		})
	default:
		t.Fatal("set CONTRACTTESTS_BROKEN to a known case")
	}
}

// stealingStore completes rows whoever holds them: the classic bug of an
// UPDATE that forgets "AND lease_owner = ? AND lease_token = ?". It reads
// each row's current owner and token and completes with those instead of
// the caller's.
type stealingStore struct{ ports.OutboxStore }

func (s *stealingStore) Complete(ctx context.Context, _ string, now time.Time, refs []ports.LeaseRef) ([]int64, error) {
	var lost []int64
	for _, ref := range refs {
		evs, err := s.List(ctx, ports.OutboxFilter{Limit: 500})
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			if ev.ID == ref.ID {
				l, err := s.OutboxStore.Complete(ctx, ev.Lease.Owner, now, []ports.LeaseRef{{ID: ev.ID, Token: ev.Lease.Token}})
				if err != nil {
					return nil, err
				}
				lost = append(lost, l...)
			}
		}
	}
	return lost, nil
}

// tokenlessTasks completes a task with whatever lease it holds now, not
// the caller's: a worker whose lease was taken over can still finish it.
type tokenlessTasks struct{ ports.TaskStore }

func (s *tokenlessTasks) Complete(ctx context.Context, id, _ string, _ int64, now time.Time) (tasks.Task, error) {
	cur, err := s.Get(ctx, id)
	if err != nil {
		return tasks.Task{}, err
	}
	return s.TaskStore.Complete(ctx, id, cur.Lease.Owner, cur.Lease.Token, now)
}

// forgetfulCache invalidates without remembering the new version, so a slow
// reader can put a replaced value back.
type forgetfulCache struct{ *memory.ConfigCache }

func (c forgetfulCache) Invalidate(ctx context.Context, key string, _ int64, ttl time.Duration) error {
	return c.ConfigCache.Invalidate(ctx, key, 0, ttl)
}

// racyCache checks the marker and the cached version, then writes, in two
// steps (a GET then a SET in Redis terms): every sequential rule holds, but
// an Invalidate between the check and the write leaves a stale row cached.
type racyCache struct {
	mu      sync.Mutex
	rows    map[string]sysconfig.Stored
	markers map[string]int64
	down    bool
}

func (c *racyCache) setDown(d bool) { c.mu.Lock(); c.down = d; c.mu.Unlock() }

func (c *racyCache) Get(_ context.Context, key string) (sysconfig.Stored, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return sysconfig.Stored{}, ports.ErrUnavailable
	}
	row, ok := c.rows[key]
	if !ok {
		return sysconfig.Stored{}, ports.ErrNotFound
	}
	return row, nil
}

func (c *racyCache) Fill(_ context.Context, s sysconfig.Stored, _ time.Duration) (bool, error) {
	c.mu.Lock()
	row, cached := c.rows[s.Key]
	newer := c.markers[s.Key] > s.Version || (cached && row.Version > s.Version)
	down := c.down
	c.mu.Unlock()
	if down {
		return false, ports.ErrUnavailable
	}
	if newer {
		return false, nil
	}
	time.Sleep(2 * time.Millisecond) // the window between the check and the write
	c.mu.Lock()
	c.rows[s.Key] = s
	c.mu.Unlock()
	return true, nil
}

func (c *racyCache) Invalidate(_ context.Context, key string, minVersion int64, _ time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return ports.ErrUnavailable
	}
	delete(c.rows, key)
	if minVersion > c.markers[key] {
		c.markers[key] = minVersion
	}
	return nil
}
