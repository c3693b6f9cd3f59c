package pgoutbox

import (
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/july/template/core/lease"
	"github.com/july/template/core/outbox"
)

// outboxRow is the scan target for tb_outbox_event. Only the store's SQL
// writes it; nullable text columns read back as "" and NULL times as zero.
type outboxRow struct {
	bun.BaseModel `bun:"table:tb_outbox_event"`

	ID               int64           `bun:"id,pk,autoincrement"`
	EventID          string          `bun:"event_id"`
	EventType        string          `bun:"event_type"`
	PayloadVersion   int             `bun:"payload_version"`
	AggregateType    string          `bun:"aggregate_type"`
	AggregateID      string          `bun:"aggregate_id"`
	ResourceType     string          `bun:"resource_type"`
	ResourceID       string          `bun:"resource_id"`
	BusinessKey      string          `bun:"business_key,nullzero"`
	RequestID        string          `bun:"request_id"`
	CorrelationID    string          `bun:"correlation_id"`
	Payload          json.RawMessage `bun:"payload,type:jsonb"`
	Status           int16           `bun:"status"`
	RetryCount       int             `bun:"retry_count"`
	NextAttemptAt    time.Time       `bun:"next_attempt_at"`
	LeaseOwner       string          `bun:"lease_owner,nullzero"`
	LeaseToken       int64           `bun:"lease_token"`
	LeaseExpiresAt   time.Time       `bun:"lease_expires_at,nullzero"`
	LastErrorCode    string          `bun:"last_error_code,nullzero"`
	LastErrorMessage string          `bun:"last_error_message,nullzero"`
	ReplayBatchID    string          `bun:"replay_batch_id,nullzero"`
	ReplayedBy       string          `bun:"replayed_by,nullzero"`
	ReplayReason     string          `bun:"replay_reason,nullzero"`
	ReplayedAt       time.Time       `bun:"replayed_at,nullzero"`
	CreatedAt        time.Time       `bun:"created_at"`
	NotBefore        time.Time       `bun:"not_before,nullzero"`
	Ordered          bool            `bun:"ordered"`
	UpdatedAt        time.Time       `bun:"updated_at"`
	DeliveredAt      time.Time       `bun:"delivered_at,nullzero"`
	TraceParent      string          `bun:"trace_parent,nullzero"`
	TraceState       string          `bun:"trace_state,nullzero"`
}

// toEvent converts a row to the core model. Times come back in UTC so
// callers compare them without caring about the session time zone.
func (r *outboxRow) toEvent() outbox.Event {
	ev := outbox.Event{
		ID:               r.ID,
		EventID:          r.EventID,
		EventType:        r.EventType,
		PayloadVersion:   r.PayloadVersion,
		AggregateType:    r.AggregateType,
		AggregateID:      r.AggregateID,
		ResourceType:     r.ResourceType,
		ResourceID:       r.ResourceID,
		BusinessKey:      r.BusinessKey,
		RequestID:        r.RequestID,
		CorrelationID:    r.CorrelationID,
		TraceParent:      r.TraceParent,
		TraceState:       r.TraceState,
		Payload:          r.Payload,
		Status:           outbox.Status(r.Status),
		RetryCount:       r.RetryCount,
		NextAttemptAt:    r.NextAttemptAt.UTC(),
		Lease:            lease.Lease{Owner: r.LeaseOwner, Token: r.LeaseToken, ExpiresAt: utcOrZero(r.LeaseExpiresAt)},
		LastErrorCode:    r.LastErrorCode,
		LastErrorMessage: r.LastErrorMessage,
		CreatedAt:        r.CreatedAt.UTC(),
		NotBefore:        utcOrZero(r.NotBefore),
		Ordered:          r.Ordered,
		UpdatedAt:        r.UpdatedAt.UTC(),
	}
	if !r.DeliveredAt.IsZero() {
		at := r.DeliveredAt.UTC()
		ev.DeliveredAt = &at
	}
	return ev
}

func toEvents(rows []outboxRow) []outbox.Event {
	evs := make([]outbox.Event, len(rows))
	for i := range rows {
		evs[i] = rows[i].toEvent()
	}
	return evs
}

func utcOrZero(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}
