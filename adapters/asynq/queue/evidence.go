package queue

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/july/template/core/ports"
)

// Evidence defaults.
const (
	// DefaultEvidenceEvery is the longest a consumption record waits in
	// memory before it is written. The reconciler waits longer than this
	// (relay.DefaultEvidenceLag) before it calls a task lost.
	DefaultEvidenceEvery = 50 * time.Millisecond
	// DefaultEvidenceBatch is the most records one INSERT writes.
	DefaultEvidenceBatch = 500
	evidenceBuffer       = 4 * DefaultEvidenceBatch
	evidenceTimeout      = 5 * time.Second
)

// Evidence writes consumption records (ports.Consumption) for the worker
// in the background: a task's handler hands its record over and returns
// at once, so the queue's acknowledgement does not wait for Postgres; the
// records of about DefaultEvidenceEvery are written by one INSERT. When
// the buffer is full, handlers wait for room (backpressure), never drop.
//
// A record is lost only when the process dies in the interval between a
// task's end and its write, or Postgres refuses the write three times
// (logged at ERROR). Either way the reconciler then sees the event as
// unconsumed: the completed task the queue retains is recorded from there,
// or, when the queue no longer holds it, the event is published again and
// the consumer's own idempotency absorbs the repeat.
type Evidence struct {
	rec   ports.ConsumptionRecorder
	every time.Duration
	batch int
	log   *slog.Logger
	ch    chan ports.Consumption

	once sync.Once
	done chan struct{}
}

// NewEvidence returns a running Evidence writing through rec every every
// (0: DefaultEvidenceEvery). Close flushes and stops it.
func NewEvidence(rec ports.ConsumptionRecorder, every time.Duration, log *slog.Logger) *Evidence {
	e := &Evidence{rec: rec, every: cmp.Or(every, DefaultEvidenceEvery), batch: DefaultEvidenceBatch,
		log: cmp.Or(log, slog.Default()), ch: make(chan ports.Consumption, evidenceBuffer), done: make(chan struct{})}
	go e.run()
	return e
}

// Record queues c for the next write; it waits only while the buffer is
// full, and then at most until ctx ends.
func (e *Evidence) Record(ctx context.Context, c ports.Consumption) error {
	select {
	case e.ch <- c:
		return nil
	default:
	}
	select {
	case e.ch <- c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close writes what is queued and stops. Call it after the worker stopped
// taking tasks; Record must not be called after.
func (e *Evidence) Close() {
	e.once.Do(func() { close(e.ch) })
	<-e.done
}

func (e *Evidence) run() {
	defer close(e.done)
	t := time.NewTicker(e.every)
	defer t.Stop()
	var pending []ports.Consumption
	for {
		select {
		case c, ok := <-e.ch:
			if !ok {
				e.write(pending)
				return
			}
			if pending = append(pending, c); len(pending) >= e.batch {
				e.write(pending)
				pending = nil
			}
		case <-t.C:
			if len(pending) > 0 {
				e.write(pending)
				pending = nil
			}
		}
	}
}

// write tries three times, then logs the records it could not write.
func (e *Evidence) write(cs []ports.Consumption) {
	if len(cs) == 0 {
		return
	}
	var err error
	for attempt := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), evidenceTimeout)
		err = e.rec.RecordConsumed(ctx, cs)
		cancel()
		if err == nil {
			return
		}
		time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
	}
	e.log.Error("asynq queue: consumption records not written; the reconciler will treat these events as unconsumed (a retained task is recorded from the queue, a missing one published again)",
		slog.Int("records", len(cs)), slog.String("first_event_id", cs[0].EventID), slog.String("error", err.Error()))
}

// EvidenceMiddleware hands a record of every envelope task the consumer
// ran to success to ev, named consumer, stamped by now; it runs inside
// EnvelopeMiddleware.
func EvidenceMiddleware(ev *Evidence, consumer string, now func() time.Time) asynq.MiddlewareFunc {
	return func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
			if err := next.ProcessTask(ctx, task); err != nil {
				return err
			}
			if env, ok := EnvelopeFrom(ctx); ok {
				// A full buffer past the task's deadline: the task ran, the
				// record is what is missing; see Evidence.
				_ = ev.Record(ctx, ports.Consumption{EventID: env.EventID, Consumer: consumer, At: now(), Ordered: env.Ordered})
			}
			return nil
		})
	}
}
