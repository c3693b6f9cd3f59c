package outboxcmd

import (
	"encoding/json"
	"time"

	"github.com/july/template/core/outbox"
)

// eventView is an event as the operator commands print it: never the
// payload unless asked.
type eventView struct {
	EventID        string          `json:"event_id"`
	EventType      string          `json:"event_type"`
	PayloadVersion int             `json:"payload_version"`
	Status         string          `json:"status"`
	StatusCode     int16           `json:"status_code"`
	AggregateType  string          `json:"aggregate_type"`
	AggregateID    string          `json:"aggregate_id"`
	ResourceType   string          `json:"resource_type"`
	ResourceID     string          `json:"resource_id"`
	RequestID      string          `json:"request_id"`
	CorrelationID  string          `json:"correlation_id"`
	Ordered        bool            `json:"ordered,omitempty"`
	RetryCount     int             `json:"retry_count"`
	NextAttemptAt  time.Time       `json:"next_attempt_at"`
	LeaseOwner     string          `json:"lease_owner,omitempty"`
	LastErrorCode  string          `json:"last_error_code,omitempty"`
	LastError      string          `json:"last_error_message,omitempty"`
	CreatedAt      time.Time       `json:"created_at"`
	DeliveredAt    *time.Time      `json:"delivered_at,omitempty"`
	Payload        json.RawMessage `json:"payload,omitempty"`
}

func viewOf(ev outbox.Event, withPayload bool) eventView {
	v := eventView{
		EventID: ev.EventID, EventType: ev.EventType, PayloadVersion: ev.PayloadVersion,
		Status: ev.Status.String(), StatusCode: int16(ev.Status),
		AggregateType: ev.AggregateType, AggregateID: ev.AggregateID, ResourceType: ev.ResourceType, ResourceID: ev.ResourceID,
		RequestID: ev.RequestID, CorrelationID: ev.CorrelationID, Ordered: ev.Ordered, RetryCount: ev.RetryCount, NextAttemptAt: ev.NextAttemptAt,
		LeaseOwner: ev.Lease.Owner, LastErrorCode: ev.LastErrorCode, LastError: ev.LastErrorMessage,
		CreatedAt: ev.CreatedAt, DeliveredAt: ev.DeliveredAt,
	}
	if withPayload {
		v.Payload = ev.Payload
	}
	return v
}

// stuckView is one line of `relay outbox stuck`.
type stuckView struct {
	AggregateType string    `json:"aggregate_type"`
	AggregateID   string    `json:"aggregate_id"`
	EventID       string    `json:"blocking_event_id"`
	EventType     string    `json:"blocking_event_type"`
	Reason        string    `json:"reason"`
	ErrorCode     string    `json:"error_code,omitempty"`
	Since         time.Time `json:"since"`
	Waiting       int64     `json:"waiting"`
}
