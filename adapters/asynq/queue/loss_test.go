package queue_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/ports"
)

// signals collects what a LossWatcher reported.
type signals struct {
	mu    sync.Mutex
	kinds []string
}

func (s *signals) add(sig ports.LossSignal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kinds = append(s.kinds, sig.Kind)
}

func (s *signals) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.kinds
	s.kinds = nil
	slices.Sort(out)
	return out
}

// Each way a Redis forgets acknowledged writes is reported once, at the
// next look, and a quiet Redis reports nothing.
func TestLossWatcherSignals(t *testing.T) {
	t.Parallel()
	red := testinfra.StartRedisProc(t)
	opt, err := asynq.ParseRedisURI(red.URL)
	require.NoError(t, err)
	var got signals
	w, err := queue.NewLossWatcher(opt, "lossq", 0, nil, got.add)
	require.NoError(t, err)
	ctx := t.Context()
	c := opt.MakeRedisClient().(redis.UniversalClient)
	t.Cleanup(func() { _ = c.Close() })

	w.Check(ctx) // the first look sets the canary and remembers the node
	w.Check(ctx)
	require.Empty(t, got.take(), "nothing changed: no signal")

	require.NoError(t, c.FlushDB(ctx).Err())
	w.Check(ctx)
	require.Equal(t, []string{"canary_missing"}, got.take(), "a flush")
	w.Check(ctx)
	require.Empty(t, got.take(), "reported once; the canary is back")

	red.Stop(t) // SIGKILL: no persistence, comes back empty with a new run_id
	w.Check(ctx)
	require.Empty(t, got.take(), "an unreachable Redis is not a signal by itself")
	red.Start(t)
	w.Check(ctx)
	require.Equal(t, []string{"canary_missing", "restart"}, got.take(), "a restart without persistence")

	require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", "allkeys-random").Err())
	info, err := c.Info(ctx, "memory").Result()
	require.NoError(t, err)
	var used int64
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			_, _ = fmt.Sscan(v, &used)
		}
	}
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", fmt.Sprint(used+512*1024)).Err())
	for i := range 4000 { // 4 MB into a 0.5 MB margin: keys are evicted
		if err := c.Set(ctx, fmt.Sprintf("junk:%d", i), strings.Repeat("x", 1024), 0).Err(); err != nil {
			break
		}
	}
	w.Check(ctx)
	require.Contains(t, got.take(), "eviction", "keys evicted by maxmemory-policy")
}

// Two relays watch one queue. One whose first look comes only after a
// flush (it started late, or its looks timed out on a busy machine) must
// not hide the flush from the other: with one shared canary it put the
// canary back unreported, and the relay that had seen it never knew (a
// gate's FLUSHDB scenario counted no canary_missing at all).
func TestLossWatchersDoNotMaskEachOther(t *testing.T) {
	t.Parallel()
	red := testinfra.StartRedisProc(t)
	opt, err := asynq.ParseRedisURI(red.URL)
	require.NoError(t, err)
	var gotA, gotB signals
	a, err := queue.NewLossWatcher(opt, "lossq", 0, nil, gotA.add)
	require.NoError(t, err)
	b, err := queue.NewLossWatcher(opt, "lossq", 0, nil, gotB.add)
	require.NoError(t, err)
	ctx := t.Context()
	c := opt.MakeRedisClient().(redis.UniversalClient)
	t.Cleanup(func() { _ = c.Close() })

	a.Check(ctx)
	require.NoError(t, c.FlushDB(ctx).Err())
	b.Check(ctx) // b's first look: it cannot know what was there before
	require.Empty(t, gotB.take(), "a first look reports nothing")
	a.Check(ctx)
	require.Equal(t, []string{"canary_missing"}, gotA.take(), "a sees the flush whatever b did in between")

	keys, err := c.Keys(ctx, "asynq:{lossq}:july:canary*").Result()
	require.NoError(t, err)
	require.Len(t, keys, 2, "one canary per watcher")
	for _, k := range keys {
		ttl, err := c.TTL(ctx, k).Result()
		require.NoError(t, err)
		require.Positive(t, ttl, "%s expires, so a stopped relay's canary does not stay forever", k)
	}
}
