//go:build contractbreak

package contracttests_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/adapters/postgres"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/adapters/postgres/pgtasks"
	"github.com/july/template/adapters/redis"
	"github.com/july/template/contracttests"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/lease"
	"github.com/july/template/core/outbox"
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
	case "redis-guard-release-get-then-del":
		contracttests.RunGuard(t, func(t *testing.T) contracttests.GuardFixture {
			r := testinfra.NewRedis(t)
			prefix := r.Prefix + "guard:"
			g, err := redis.NewGuard(r.Client, redis.GuardConfig{Prefix: prefix})
			require.NoError(t, err)
			return contracttests.GuardFixture{
				Guard: getThenDelGuard{Guard: g, client: r.Client, prefix: prefix},
				Outage: func(t *testing.T, _ ports.Guard) (ports.Guard, func()) {
					c := testinfra.UnreachableRedis(t)
					down, err := redis.NewGuard(c, redis.GuardConfig{Prefix: prefix})
					require.NoError(t, err)
					return getThenDelGuard{Guard: down, client: c, prefix: prefix}, func() {}
				},
			}
		})
	case "postgres-outbox-claim-without-lock", "postgres-outbox-finish-check-then-write":
		wrap := func(store ports.OutboxStore, db *bun.DB) ports.OutboxStore {
			if os.Getenv("CONTRACTTESTS_BROKEN") == "postgres-outbox-claim-without-lock" {
				return unlockedClaimStore{OutboxStore: store, db: db}
			}
			return checkThenWriteOutbox{OutboxStore: store}
		}
		caps := contracttests.OutboxCaps{Outage: func(t *testing.T, _ ports.OutboxStore) (ports.OutboxStore, func()) {
			db := testinfra.UnreachableDB(t)
			down, err := pgoutbox.NewStore(db, pgoutbox.Config{})
			require.NoError(t, err)
			return wrap(down, db), func() {}
		}}
		contracttests.RunOutboxStore(t, caps, func(t *testing.T) ports.OutboxStore {
			db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
			store, err := pgoutbox.NewStore(db, pgoutbox.Config{})
			require.NoError(t, err)
			return wrap(store, db)
		})
	case "postgres-tasks-finish-check-then-write":
		const table = "tb_export_task"
		caps := contracttests.TaskCaps{Outage: func(t *testing.T, _ ports.TaskStore) (ports.TaskStore, func()) {
			down, err := pgtasks.NewStore(testinfra.UnreachableDB(t), table)
			require.NoError(t, err)
			return checkThenWriteTasks{TaskStore: down}, func() {}
		}}
		contracttests.RunTaskStore(t, caps, func(t *testing.T) ports.TaskStore {
			db := testinfra.NewDB(t, testinfra.DBOpts{}).Bun
			ddl, err := pgtasks.TableDDL(table)
			require.NoError(t, err)
			_, err = db.ExecContext(t.Context(), ddl)
			require.NoError(t, err)
			store, err := pgtasks.NewStore(db, table)
			require.NoError(t, err)
			return checkThenWriteTasks{TaskStore: store}
		})
	case "postgres-outbox-recover-keeps-retry-count":
		caps := contracttests.OutboxCaps{Outage: func(t *testing.T, _ ports.OutboxStore) (ports.OutboxStore, func()) {
			db := testinfra.UnreachableDB(t)
			down, err := pgoutbox.NewStore(db, pgoutbox.Config{})
			require.NoError(t, err)
			return uncountedRecoverStore{OutboxStore: down, db: db}, func() {}
		}}
		contracttests.RunOutboxStore(t, caps, func(t *testing.T) ports.OutboxStore {
			db := testinfra.NewDB(t, testinfra.DBOpts{Migrate: postgres.Migrate}).Bun
			store, err := pgoutbox.NewStore(db, pgoutbox.Config{})
			require.NoError(t, err)
			return uncountedRecoverStore{OutboxStore: store, db: db}
		})
	case "outbox-complete-ignores-token":
		caps := contracttests.OutboxCaps{Outage: func(_ *testing.T, s ports.OutboxStore) (ports.OutboxStore, func()) {
			m := s.(tokenBlindOutbox).OutboxStore.(*memory.OutboxStore)
			m.SetDown(true)
			return s, func() { m.SetDown(false) }
		}}
		contracttests.RunOutboxStore(t, caps, func(t *testing.T) ports.OutboxStore {
			return tokenBlindOutbox{OutboxStore: memory.NewOutboxStore()}
		})
	case "periodic-append-without-existing-check":
		contracttests.RunPeriodicCommandStore(t, func(t *testing.T) contracttests.PeriodicCommandStoreFixture {
			out := memory.NewOutboxStore()
			s := &naivePeriodic{out: out, cursors: map[string]time.Time{}}
			return contracttests.PeriodicCommandStoreFixture{
				Store: s,
				Stored: func(t *testing.T) []string {
					evs, err := out.List(t.Context(), ports.OutboxFilter{Limit: 500})
					require.NoError(t, err)
					var ids []string
					for _, ev := range evs {
						ids = append(ids, ev.EventID)
					}
					return ids
				},
				Append: func(t *testing.T, ev outbox.Event) { require.NoError(t, out.Append(t.Context(), ev)) },
				Hold:   func(*testing.T, string) func() { return func() {} },
				Outage: func(_ *testing.T, live ports.PeriodicCommandStore) (ports.PeriodicCommandStore, func()) {
					out.SetDown(true)
					return live, func() { out.SetDown(false) }
				},
			}
		})
	case "guard-outage-wrong-error-and-hang":
		contracttests.RunGuard(t, func(t *testing.T) contracttests.GuardFixture {
			g := &wrongOutageGuard{Guard: memory.NewGuard(time.Now)}
			return contracttests.GuardFixture{
				Guard: g,
				Outage: func(_ *testing.T, live ports.Guard) (ports.Guard, func()) {
					g.down.Store(true)
					return live, func() { g.down.Store(false) }
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

// getThenDelGuard releases with a GET and then a DEL, two round trips
// instead of one compare-and-delete script: every sequential rule holds, but
// a second release that read the old owner deletes the hold a new owner
// took in between.
type getThenDelGuard struct {
	*redis.Guard
	client rueidis.Client
	prefix string
}

func (g getThenDelGuard) Release(ctx context.Context, key, owner string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	holder, err := g.client.Do(ctx, g.client.B().Get().Key(g.prefix+key).Build()).ToString()
	if rueidis.IsRedisNil(err) || (err == nil && holder != owner) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("release guard %q: %w", key, ports.ErrUnavailable)
	}
	n, err := g.client.Do(ctx, g.client.B().Del().Key(g.prefix+key).Build()).AsInt64()
	if err != nil {
		return false, fmt.Errorf("release guard %q: %w", key, ports.ErrUnavailable)
	}
	return n == 1, nil
}

// uncountedRecoverStore is the recovery before a lost lease counted as an
// attempt: an expired
// lease goes back to Pending due at once, keeping retry_count, so an event
// that kills every relay holding it is claimed forever and never fails.
type uncountedRecoverStore struct {
	ports.OutboxStore
	db *bun.DB
}

func (s uncountedRecoverStore) RecoverExpired(ctx context.Context, p ports.RecoverParams) (ports.RecoverResult, error) {
	res, err := s.db.ExecContext(ctx, `WITH expired AS MATERIALIZED (
		SELECT id FROM tb_outbox_event WHERE status = 2 AND lease_expires_at <= ?
		ORDER BY lease_expires_at LIMIT ? FOR UPDATE SKIP LOCKED
	)
	UPDATE tb_outbox_event AS e
	SET status = 1, next_attempt_at = ?, updated_at = ?, lease_owner = NULL, lease_expires_at = NULL
	FROM expired WHERE e.id = expired.id`, p.Now, p.Limit, p.Now, p.Now)
	if err != nil {
		return ports.RecoverResult{}, fmt.Errorf("recover expired outbox leases: %w: %w", ports.ErrUnavailable, err)
	}
	n, err := res.RowsAffected()
	return ports.RecoverResult{Requeued: int(n)}, err
}

// unlockedClaimStore claims in two statements, a SELECT of the due rows and
// an UPDATE of those ids, without FOR UPDATE SKIP LOCKED and without
// re-checking the status: one claimer at a time sees the contract kept, but
// two claimers that select together both lease the same rows.
type unlockedClaimStore struct {
	ports.OutboxStore
	db *bun.DB
}

func (s unlockedClaimStore) Claim(ctx context.Context, p ports.ClaimParams) ([]outbox.Event, error) {
	if p.Owner == "" || p.Limit < 1 || p.LeaseFor <= 0 || p.LeaseFor > lease.MaxTTL {
		return s.OutboxStore.Claim(ctx, p) // the real store's validation
	}
	var ids []int64
	err := s.db.NewRaw(`SELECT id FROM tb_outbox_event WHERE status = 1 AND next_attempt_at <= ?
		ORDER BY next_attempt_at, id LIMIT ?`, p.Now, p.Limit).Scan(ctx, &ids)
	if err != nil {
		return nil, fmt.Errorf("claim outbox events: %w: %w", ports.ErrUnavailable, err)
	}
	if len(ids) == 0 {
		return []outbox.Event{}, nil
	}
	var eventIDs []string
	err = s.db.NewRaw(`UPDATE tb_outbox_event SET status = 2, lease_owner = ?, lease_token = lease_token + 1,
		lease_expires_at = ?, updated_at = ? WHERE id IN (?) RETURNING event_id::text`,
		p.Owner, p.Now.Add(p.LeaseFor), p.Now, bun.List(ids)).Scan(ctx, &eventIDs)
	if err != nil {
		return nil, fmt.Errorf("claim outbox events: %w: %w", ports.ErrUnavailable, err)
	}
	evs := make([]outbox.Event, 0, len(eventIDs))
	for _, id := range eventIDs {
		ev, err := s.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		evs = append(evs, ev)
	}
	slices.SortFunc(evs, func(a, b outbox.Event) int {
		return cmp.Or(a.NextAttemptAt.Compare(b.NextAttemptAt), cmp.Compare(a.ID, b.ID))
	})
	return evs, nil
}

// checkThenWriteOutbox checks each lease (owner, token, expiry) by reading
// the row, and then writes in a second step that trusts the check, the way
// an UPDATE ... WHERE id = ? after a SELECT does: every sequential rule
// holds, but a re-claim between the check and the write is overwritten by
// the stale holder.
type checkThenWriteOutbox struct{ ports.OutboxStore }

func (s checkThenWriteOutbox) Complete(ctx context.Context, owner string, now time.Time, refs []ports.LeaseRef) ([]int64, error) {
	ok, lost, err := s.check(ctx, owner, now, refs)
	if err != nil || len(ok) == 0 {
		return lost, err
	}
	for _, r := range ok {
		cur, err := s.afterGap(ctx, r)
		if err != nil {
			return nil, err
		}
		if cur.Status != outbox.Delivering {
			continue // nothing to borrow a lease from; an UPDATE by id would have written it
		}
		if _, err := s.OutboxStore.Complete(ctx, cur.Lease.Owner, now, []ports.LeaseRef{{ID: r.ID, Token: cur.Lease.Token}}); err != nil {
			return nil, err
		}
	}
	return lost, nil
}

func (s checkThenWriteOutbox) Fail(ctx context.Context, owner string, now time.Time, items []ports.FailItem) ([]int64, error) {
	refs := make([]ports.LeaseRef, len(items))
	for i := range items {
		refs[i] = items[i].Ref
	}
	ok, lost, err := s.check(ctx, owner, now, refs)
	if err != nil || len(ok) == 0 {
		return lost, err
	}
	for _, it := range items {
		if !slices.Contains(ok, it.Ref) {
			continue
		}
		cur, err := s.afterGap(ctx, it.Ref)
		if err != nil {
			return nil, err
		}
		if cur.Status != outbox.Delivering {
			continue // nothing to borrow a lease from; an UPDATE by id would have written it
		}
		it.Ref.Token = cur.Lease.Token
		if _, err := s.OutboxStore.Fail(ctx, cur.Lease.Owner, now, []ports.FailItem{it}); err != nil {
			return nil, err
		}
	}
	return lost, nil
}

// check splits refs into those owner holds live at now and the lost ids.
// afterGap reads the row once a re-claim has landed between the check and
// the write, or checkThenWriteGap has passed (see checkThenWriteTasks).
func (s checkThenWriteOutbox) afterGap(ctx context.Context, r ports.LeaseRef) (outbox.Event, error) {
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		cur, err := s.current(ctx, r.ID)
		if err != nil || cur.Lease.Token != r.Token || time.Since(start) > checkThenWriteGap {
			return cur, err
		}
	}
}

func (s checkThenWriteOutbox) check(ctx context.Context, owner string, now time.Time, refs []ports.LeaseRef) (ok []ports.LeaseRef, lost []int64, err error) {
	for _, r := range refs {
		cur, err := s.current(ctx, r.ID)
		if err != nil {
			return nil, nil, err
		}
		if cur.Status == outbox.Delivering && cur.Lease.Owner == owner && cur.Lease.Token == r.Token && now.Before(cur.Lease.ExpiresAt) {
			ok = append(ok, r)
		} else {
			lost = append(lost, r.ID)
		}
	}
	return ok, lost, nil
}

// current reads the row with id as it is now. The writes after the check
// go through the port, so they borrow the lease the row has at that moment.

func (s checkThenWriteOutbox) current(ctx context.Context, id int64) (outbox.Event, error) {
	evs, err := s.List(ctx, ports.OutboxFilter{Limit: 500})
	if err != nil {
		return outbox.Event{}, err
	}
	for _, ev := range evs {
		if ev.ID == id {
			return ev, nil
		}
	}
	return outbox.Event{}, fmt.Errorf("outbox row %d: %w", id, ports.ErrNotFound)
}

// checkThenWriteTasks finishes a task in two steps: it reads the task and
// checks the caller's lease, then writes trusting that check (an UPDATE
// ... WHERE id = ? after a SELECT). Every sequential rule holds, but a
// takeover between the check and the write is finished by the stale
// worker.
type checkThenWriteTasks struct{ ports.TaskStore }

func (s checkThenWriteTasks) Complete(ctx context.Context, id, owner string, token int64, now time.Time) (tasks.Task, error) {
	return s.finish(ctx, id, owner, token, now, func(owner string, token int64) (tasks.Task, error) {
		return s.TaskStore.Complete(ctx, id, owner, token, now)
	})
}

func (s checkThenWriteTasks) Fail(ctx context.Context, id, owner string, token int64, summary tasks.Summary, now time.Time) (tasks.Task, error) {
	return s.finish(ctx, id, owner, token, now, func(owner string, token int64) (tasks.Task, error) {
		return s.TaskStore.Fail(ctx, id, owner, token, summary, now)
	})
}

func (s checkThenWriteTasks) finish(ctx context.Context, id, owner string, token int64, now time.Time, write func(string, int64) (tasks.Task, error)) (tasks.Task, error) {
	cur, err := s.Get(ctx, id)
	if err != nil || cur.Status != tasks.Processing || cur.Lease.Owner != owner || cur.Lease.Token != token || !now.Before(cur.Lease.ExpiresAt) {
		return write(owner, token) // the real store gives the precise refusal
	}
	// The check passed; the write borrows whatever lease the task has now.
	// The gap between the two is held open until a takeover lands in it
	// (or checkThenWriteGap passes), so the suite's race catches this store
	// on every run, however the machine schedules the two goroutines.
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		if cur, err = s.Get(ctx, id); err != nil {
			return tasks.Task{}, err
		}
		if cur.Lease.Token != token || time.Since(start) > checkThenWriteGap {
			return write(cur.Lease.Owner, cur.Lease.Token)
		}
	}
}

// checkThenWriteGap bounds how long a check-then-write fake waits between
// its check and its write for a competing claim to commit: long enough for
// a takeover started beside it on a loaded machine, short enough that the
// sequential cases, where none comes, stay quick.
const checkThenWriteGap = 250 * time.Millisecond

// tokenBlindOutbox completes a row when the owner matches, whatever the
// fencing token: a relay that restarted with the same owner id completes
// rows its successor re-claimed.
type tokenBlindOutbox struct{ ports.OutboxStore }

func (s tokenBlindOutbox) Complete(ctx context.Context, owner string, now time.Time, refs []ports.LeaseRef) ([]int64, error) {
	evs, err := s.List(ctx, ports.OutboxFilter{Limit: 500})
	if err != nil {
		return nil, err
	}
	token := map[int64]int64{}
	for _, ev := range evs {
		if ev.Lease.Owner == owner {
			token[ev.ID] = ev.Lease.Token
		}
	}
	blind := make([]ports.LeaseRef, len(refs))
	for i, r := range refs {
		blind[i] = r
		if tk, ok := token[r.ID]; ok {
			blind[i].Token = tk
		}
	}
	return s.OutboxStore.Complete(ctx, owner, now, blind)
}

// wrongOutageGuard gets two methods wrong when its store is down: Acquire
// returns an error that does not wrap ports.ErrUnavailable, and Release
// hangs until its context ends. The outage case must name both.
type wrongOutageGuard struct {
	*memory.Guard
	down atomic.Bool
}

func (g *wrongOutageGuard) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if g.down.Load() {
		return false, errors.New("guard store: connection refused")
	}
	return g.Guard.Acquire(ctx, key, owner, ttl)
}

func (g *wrongOutageGuard) Owner(ctx context.Context, key string) (string, error) {
	if g.down.Load() {
		return "", fmt.Errorf("guard owner %q: %w", key, ports.ErrUnavailable)
	}
	return g.Guard.Owner(ctx, key)
}

func (g *wrongOutageGuard) Release(ctx context.Context, key, owner string) (bool, error) {
	if g.down.Load() {
		<-ctx.Done()
		return false, fmt.Errorf("release guard %q: %w", key, ports.ErrUnavailable)
	}
	return g.Guard.Release(ctx, key, owner)
}

// naivePeriodic appends every event decide returns without looking for
// the ones already stored: a duplicate event_id aborts its pass.
type naivePeriodic struct {
	mu      sync.Mutex
	out     *memory.OutboxStore
	cursors map[string]time.Time
}

func (s *naivePeriodic) Advance(ctx context.Context, command string, now time.Time, decide ports.PeriodicDecideFunc) (ports.PeriodicAdvance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cursor, ok := s.cursors[command]
	if !ok {
		s.cursors[command] = now
		return ports.PeriodicAdvance{Created: true}, nil
	}
	events, next, err := decide(cursor)
	if err != nil {
		return ports.PeriodicAdvance{}, err
	}
	if err := s.out.Append(ctx, events...); err != nil {
		return ports.PeriodicAdvance{}, err
	}
	s.cursors[command] = next
	return ports.PeriodicAdvance{Appended: len(events)}, nil
}
