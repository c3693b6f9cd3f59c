package outbox

import (
	"errors"
	"time"
)

// ConsumerFailedCode is the error code a ConsumerFailureRecord holds when
// the caller gives no valid code of its own.
const ConsumerFailedCode = "CONSUMER_FAILED"

// ConsumerFailureRecord is the durable record (a row of
// tb_outbox_consumer_failure) that a delivered event's consumer gave up on
// it for good (its queue retries ran out, or it returned a permanent
// error); the report it is made from is ports.ConsumerFailure. It is kept
// apart from the event, keyed by its event id: the event row never changes
// for it (whatever its status), and the open failure is what an operator
// finds and replays from after the queue's trimmed archive is gone.
type ConsumerFailureRecord struct {
	EventID   string
	EventType string
	Code      string
	Message   string
	FailedAt  time.Time
	// ReplayBatchID and ReplayRequestedAt are set when an operator replays
	// it; ResolvedAt when the event was enqueued again.
	ReplayBatchID     string
	ReplayRequestedAt *time.Time
	ResolvedAt        *time.Time
}

// NewConsumerFailureRecord records that ev's consumer failed with code and
// message. code must be UPPER_SNAKE_CASE of at most 64 bytes; anything else
// records ConsumerFailedCode. message goes through SafeMessage; the caller
// must redact it first. ev may be in any status: the queue ran its task,
// so the relay published it, whether or not the relay has recorded that
// yet (a slow batch's Complete, or a lost one after which the recovery put
// the row back to Pending or Failed). The failure is keyed by the event id
// and never changes the row. It returns an error for no event id.
func NewConsumerFailureRecord(ev Event, code, message string, now time.Time) (ConsumerFailureRecord, error) {
	if ev.EventID == "" {
		return ConsumerFailureRecord{}, errors.New("new consumer failure: the event has no event id")
	}
	if !validCode(code) {
		code = ConsumerFailedCode
	}
	return ConsumerFailureRecord{EventID: ev.EventID, EventType: ev.EventType, Code: code, Message: SafeMessage(message), FailedAt: now}, nil
}

// Open reports whether the failure still waits for a replay.
func (f ConsumerFailureRecord) Open() bool { return f.ResolvedAt == nil }
