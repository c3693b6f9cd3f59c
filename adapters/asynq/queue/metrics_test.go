package queue_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/contracttests/testinfra"
)

func TestQueueStats(t *testing.T) {
	t.Parallel()

	t.Run("SizesByState", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		_, err := h.client.Enqueue(asynq.NewTask("t.now", []byte(`{}`)), asynq.Queue(h.queue))
		require.NoError(t, err)
		_, err = h.client.Enqueue(asynq.NewTask("t.later", []byte(`{}`)), asynq.Queue(h.queue), asynq.ProcessIn(time.Hour))
		require.NoError(t, err)
		empty := h.queue + "_never_used"

		reg := prometheus.NewRegistry()
		require.NoError(t, reg.Register(queue.NewQueueStats(h.insp, []string{h.queue, empty, h.queue})))
		want := "# HELP asynq_queue_tasks Tasks in an Asynq queue by state (pending, active, scheduled, retry, archived, completed), read at scrape time.\n# TYPE asynq_queue_tasks gauge\n"
		for _, q := range []string{h.queue, empty} {
			n := map[string]int{}
			if q == h.queue {
				n = map[string]int{"pending": 1, "scheduled": 1}
			}
			for _, st := range []string{"active", "archived", "completed", "pending", "retry", "scheduled"} {
				want += fmt.Sprintf("asynq_queue_tasks{queue=%q,state=%q} %d\n", q, st, n[st])
			}
		}
		require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "asynq_queue_tasks"))
	})

	t.Run("RedisDownIsReportedNotHung", func(t *testing.T) {
		t.Parallel()
		opt, err := asynq.ParseRedisURI("redis://" + testinfra.UnreachableAddr + "/0")
		require.NoError(t, err)
		ins := asynq.NewInspector(opt)
		t.Cleanup(func() { _ = ins.Close() })
		reg := prometheus.NewRegistry()
		require.NoError(t, reg.Register(queue.NewQueueStats(ins, []string{"q1"})))
		start := time.Now()
		require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP asynq_queue_stats_up 1 when the last read of the queue's sizes from Redis succeeded.
# TYPE asynq_queue_stats_up gauge
asynq_queue_stats_up{queue="q1"} 0
`)))
		require.Less(t, time.Since(start), queue.DefaultStatsTimeout+time.Second)
	})
}
