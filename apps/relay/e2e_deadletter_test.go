package main_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"

	"github.com/july/template/contracttests/testinfra"
)

// A consumer that gives up on a delivered event marks it failed
// (CONSUMER_FAILED) through the relay's dead-letter hook, so the failure
// outlives asynq's archive; `relay outbox replay` with REDIS_URL deletes the
// archived task, and once the consumer is fixed the relay delivers the
// event again and the consumer runs.
func TestE2EConsumerFailureIsDeadLetteredAndReplayed(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	ctx := t.Context()

	// A delivered event, as the relay leaves it.
	id := w.commit("req-dl", "corr-dl", orderCreated{OrderID: "o-dl", Amount: 5})[0]
	claimed, err := w.store.Claim(ctx, ports.ClaimParams{Owner: "relay-dl/0", Limit: 10, LeaseFor: time.Minute, Now: time.Now()})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	lost, err := w.store.Complete(ctx, "relay-dl/0", time.Now(), []ports.LeaseRef{{ID: claimed[0].ID, Token: claimed[0].Lease.Token}})
	require.NoError(t, err)
	require.Empty(t, lost)

	// The worker the relay runs, with the app's dead-letter hook and a
	// consumer that refuses the event until it is "fixed".
	var (
		broken atomic.Bool
		mu     sync.Mutex
		calls  int
		logs   testinfra.LogBuffer
	)
	broken.Store(true)
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "outbox_consumer_failures_total"}, []string{"event_type"})
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	rec, err := relay.NewDeadLetter(w.store, ports.ClockFunc(time.Now), relay.DeadLetterConfig{
		MarkedFunc: func(typ string) { failures.WithLabelValues(typ).Inc() },
	}, log)
	require.NoError(t, err)
	dead := queue.RecordDeadLetters(rec)
	opt, err := asynq.ParseRedisURI(w.redisURL)
	require.NoError(t, err)
	mux, err := queue.NewMux(log, []queue.Consumer{{EventType: orderCreatedType, Handler: queue.Handle(
		func(ctx context.Context, env outbox.Envelope, p orderCreated) error {
			mu.Lock()
			calls++
			mu.Unlock()
			if broken.Load() {
				return outbox.Permanent("ORDER_UNKNOWN", "order "+p.OrderID+" unknown; password=hunter2")
			}
			_, err := w.db.Bun.NewRaw(`INSERT INTO consumed (event_id, order_id, n, request_id, correlation_id)
				VALUES (?::uuid, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING`,
				env.EventID, p.OrderID, p.Amount, env.RequestID, env.CorrelationID).Exec(ctx)
			return err
		})}})
	require.NoError(t, err)
	srv := queue.NewServer(opt, queue.ServerConfig{
		Queues: map[string]int{w.queue: 1}, Concurrency: 2, Logger: log, ShutdownTimeout: 2 * time.Second, DeadLetterFunc: dead,
	})
	require.NoError(t, srv.Start(mux))
	t.Cleanup(func() {
		srv.Shutdown()
		if t.Failed() {
			t.Logf("worker logs:\n%s", logs.String())
		}
	})

	// The relay's publish of that event: the consumer fails permanently.
	client := asynq.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })
	enq, err := queue.NewPublisher(client, queue.Config{Queue: w.queue})
	require.NoError(t, err)
	require.Equal(t, []error{nil}, enq.Publish(ctx, []outbox.Envelope{claimed[0].Envelope()}))

	w.waitCount(1, `SELECT count(*) FROM tb_outbox_consumer_failure WHERE event_id = ?::uuid AND resolved_at IS NULL
		AND error_code = 'CONSUMER_FAILED' AND error_message LIKE '%ORDER_UNKNOWN%'`, id)
	w.waitCount(1, statusOfEvent, id, 3) // the delivered row never changes (a regression once)
	require.Zero(t, w.count(`SELECT count(*) FROM tb_outbox_consumer_failure WHERE error_message LIKE '%hunter2%'`), "the stored error is redacted")
	require.Equal(t, 1.0, testutil.ToFloat64(failures.WithLabelValues(orderCreatedType)))
	eventually(t, "the dead-letter ERROR line", func() (bool, string) {
		for line := range strings.SplitSeq(logs.String(), "\n") {
			if strings.Contains(line, `"level":"ERROR"`) && strings.Contains(line, "outbox event failed in its consumer; replay after fixing the cause") &&
				strings.Contains(line, id) && strings.Contains(line, orderCreatedType) {
				return true, ""
			}
		}
		return false, logs.String()
	})
	require.NotContains(t, logs.String(), "hunter2", "logs are redacted")
	ins := asynq.NewInspector(opt)
	t.Cleanup(func() { _ = ins.Close() })
	eventually(t, "asynq archived the task", func() (bool, string) {
		info, err := ins.GetTaskInfo(w.queue, id)
		return err == nil && info.State == asynq.TaskStateArchived, "task not archived yet"
	})

	// Fix the consumer, replay with REDIS_URL: the archived task is deleted
	// and the envelope enqueued again (the delivered row is not touched).
	broken.Store(false)
	out, errOut, code := w.runCLIEnv([]string{"REDIS_URL=" + w.redisURL, "ASYNQ_QUEUE=" + w.queue},
		"outbox", "replay", "--event-id", id, "--operator", "alice", "--reason", "consumer fixed")
	require.Equal(t, 0, code, "replay: %s", errOut)
	require.NotContains(t, errOut, "warning", "REDIS_URL is set")
	var replay struct {
		Replayed     []string `json:"replayed"`
		TasksDeleted int      `json:"asynq_tasks_deleted"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &replay), "replay output: %s", out)
	require.Equal(t, []string{id}, replay.Replayed)
	require.Equal(t, 1, replay.TasksDeleted, "the archived task is deleted: %s", out)

	w.waitCount(1, consumedEvent, id)
	w.waitCount(1, statusOfEvent, id, 3)
	require.Zero(t, w.count(`SELECT count(*) FROM tb_outbox_consumer_failure WHERE event_id = ?::uuid AND resolved_at IS NULL`, id),
		"the failure is resolved")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 2, calls, "the consumer ran once broken, once fixed")
}
