package relay

import (
	"context"
	"time"

	"github.com/july/template/core/outbox"
)

// Observer receives what the relay did, for metrics. Implementations must be
// cheap and safe for concurrent use; the Prometheus adapter is in adapters/.
type Observer interface {
	// Batch is called once per claimed batch with the events claimed and how
	// each ended: delivered, retry scheduled, failed for good, or lease lost.
	Batch(BatchResult)
	// Recovered is called once per recovery pass that took back expired
	// leases: how many went back to Pending, and which events failed for
	// good because the lost lease was their last attempt.
	Recovered(RecoveryResult)
}

// RecoveryResult summarises one recovery pass that found expired leases.
type RecoveryResult struct {
	// Requeued counts the rows returned to Pending for another attempt.
	Requeued int
	// FailedEvents names the rows now Failed with outbox.CodeLeaseExpired
	// (an alert is due).
	FailedEvents []FailedEvent
}

// BatchResult summarises one batch.
type BatchResult struct {
	Claimed   int
	Delivered int
	Retried   int
	// RetryCodes counts the retried attempts by error code (a bounded set:
	// the publisher's codes, e.g. QUEUE_UNAVAILABLE).
	RetryCodes map[string]int
	Failed     int // final failures: status Failed, an alert is due
	Lost       int // rows whose lease was lost before they were marked
	// Attempts holds, for each failed attempt, the retry_count it reached.
	Attempts []int
	// Lags holds, for each event marked delivered, the time from its
	// due time (created_at, or not_before when delayed) to its enqueue.
	Lags []time.Duration
	// LagTraceParents holds the trace_parent of each Lags entry ("" when
	// the event was written untraced), for exemplars on the lag histogram.
	LagTraceParents []string
	// FailedEvents names the final failures (safe identifiers only).
	FailedEvents []FailedEvent
}

// FailedEvent identifies a final failure without its payload.
type FailedEvent struct {
	EventID   string
	EventType string
	Code      string
	Attempts  int
}

// ClaimObserver is optionally implemented by an Observer that wants every
// claim, empty ones included: with several relays, claims that come back
// short or empty while a backlog remains are rows skipped because another
// relay held them (SKIP LOCKED), the sign that more replicas stop helping.
type ClaimObserver interface {
	// Claim is called once per successful claim with the rows it returned
	// and the batch size it asked for.
	Claim(rows, limit int)
}

type nopObserver struct{}

func (nopObserver) Batch(BatchResult)        {}
func (nopObserver) Recovered(RecoveryResult) {}

// ClaimedBatch is one claim's result: the rows leased to Owner, and when
// the claim started and returned (by the relay's clock).
type ClaimedBatch struct {
	Owner                string
	ClaimStart, ClaimEnd time.Time
	Events               []outbox.Event
}

// BatchTracer wraps each claimed batch in a trace span (adapters/tracing
// implements it with OpenTelemetry). Empty claims are not traced, so an
// idle relay records nothing.
type BatchTracer interface {
	// StartBatch is called once per non-empty claim, before publishing. The
	// returned context carries the span to the publisher and the store's
	// complete/fail writes; end is called once with the batch's result.
	StartBatch(ctx context.Context, b ClaimedBatch) (context.Context, func(BatchResult, error))
}
