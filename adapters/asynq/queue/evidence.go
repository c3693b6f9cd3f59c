package queue

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/july/template/core/ports"
)

// evidenceTimeout bounds one batch write of consumption records.
const evidenceTimeout = 5 * time.Second

// EvidenceMiddleware records, through rec, that a consumer ran an envelope
// task to success, before the queue is told: the relay's reconciler then
// reads a task the queue no longer holds and Postgres shows unconsumed as
// lost. Records of concurrent tasks are written together (one INSERT per
// batch), so the cost per event is a share of one round trip. When the
// record cannot be written the task fails and runs again later (consumers
// are idempotent), so no success goes unrecorded. consumer names the
// record; it runs inside EnvelopeMiddleware.
func EvidenceMiddleware(rec ports.ConsumptionRecorder, consumer string, now func() time.Time) asynq.MiddlewareFunc {
	b := &evidenceBatch{rec: rec}
	return func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
			if err := next.ProcessTask(ctx, task); err != nil {
				return err
			}
			env, ok := EnvelopeFrom(ctx)
			if !ok {
				return nil
			}
			if err := b.record(ctx, ports.Consumption{EventID: env.EventID, Consumer: consumer, At: now()}); err != nil {
				return fmt.Errorf("asynq queue: event %s consumed but its consumption record was not written; the task runs again: %w", env.EventID, err)
			}
			return nil
		})
	}
}

// evidenceBatch is a group commit: the first caller writes everything
// queued so far; callers arriving meanwhile wait for the next write.
type evidenceBatch struct {
	rec     ports.ConsumptionRecorder
	mu      sync.Mutex
	pending []evidenceItem
	busy    bool
}

type evidenceItem struct {
	c    ports.Consumption
	done chan error
}

func (b *evidenceBatch) record(ctx context.Context, c ports.Consumption) error {
	done := make(chan error, 1)
	b.mu.Lock()
	b.pending = append(b.pending, evidenceItem{c, done})
	lead := !b.busy
	b.busy = true
	b.mu.Unlock()
	if lead {
		b.flush()
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flush writes one batch; if more arrived meanwhile, a goroutine writes
// them, so no caller waits for more than two writes.
func (b *evidenceBatch) flush() {
	b.mu.Lock()
	batch := b.pending
	b.pending = nil
	if len(batch) == 0 {
		b.busy = false
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	cs := make([]ports.Consumption, len(batch))
	for i, it := range batch {
		cs[i] = it.c
	}
	ctx, cancel := context.WithTimeout(context.Background(), evidenceTimeout)
	err := b.rec.RecordConsumed(ctx, cs)
	cancel()
	for _, it := range batch {
		it.done <- err
	}
	go b.flush()
}
