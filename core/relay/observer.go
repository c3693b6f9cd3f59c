package relay

import "time"

// Observer receives what the relay did, for metrics. Implementations must be
// cheap and safe for concurrent use; the Prometheus adapter is in adapters/.
type Observer interface {
	// Batch is called once per claimed batch with the events claimed and how
	// each ended: delivered, retry scheduled, failed for good, or lease lost.
	Batch(BatchResult)
	// Recovered is called with the number of expired leases returned to Pending.
	Recovered(n int)
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
	// commit (created_at) to its enqueue.
	Lags []time.Duration
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

type nopObserver struct{}

func (nopObserver) Batch(BatchResult) {}
func (nopObserver) Recovered(int)     {}
