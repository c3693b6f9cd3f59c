package queue_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/adapters/memory"
	"github.com/july/template/core/outbox"
)

// The worker records every envelope task its consumer finished, once per
// consumer name, and nothing for a task that failed; Close writes what is
// still queued.
func TestEvidenceRecordsEveryConsumedTask(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	store := memory.NewOutboxStore() // a ports.ConsumptionRecorder proven by the outbox contract suite
	ev := queue.NewEvidence(store, 0, nil)
	var ran atomic.Int64
	mux, err := queue.NewMux(slog.Default(), []queue.Consumer{{EventType: "order.created", Name: "order-mailer",
		Handler: queue.Handle(func(_ context.Context, env outbox.Envelope, _ map[string]any) error {
			ran.Add(1)
			if env.RequestID == "req-fail" {
				return outbox.Permanent("NOPE", "refused")
			}
			return nil
		})}}, queue.WithEvidence(ev, nil))
	require.NoError(t, err)
	var handled atomic.Int64 // outside the evidence middleware: its record was handed over
	mux.Use(func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
			defer handled.Add(1)
			return next.ProcessTask(ctx, task)
		})
	})
	h.startWorker(t, mux, slog.Default())

	var envs []outbox.Envelope
	for i := range 20 {
		req := "req-ok"
		if i == 0 {
			req = "req-fail"
		}
		envs = append(envs, outbox.Envelope{EventID: uuid.NewString(), EventType: "order.created", PayloadVersion: 1,
			AggregateType: "order", AggregateID: "o", RequestID: req, CorrelationID: "c", OccurredAt: time.Now(),
			Payload: []byte(`{"n":1}`)})
	}
	for _, err := range h.enq.Publish(t.Context(), envs) {
		require.NoError(t, err)
	}
	// Bounded by progress: fail only when no task finished for 30 s.
	last, since := int64(-1), time.Now()
	for n := handled.Load(); n < 20 && time.Since(since) < 30*time.Second; n = handled.Load() {
		if n != last {
			last, since = n, time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.EqualValues(t, 20, ran.Load(), "the worker ran every task")
	ev.Close()

	for i, env := range envs {
		require.Equal(t, i != 0, store.ConsumedBy(env.EventID, "order-mailer"),
			"task %d (%s): a record for each finished task, none for the failed one", i, env.RequestID)
	}
}
