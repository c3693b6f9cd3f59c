package outbox

import "time"

// AuditEventType is the event type that carries an audit record through
// the outbox until the audit team's writer takes it.
const AuditEventType = "audit.recorded"

// AuditPayloadVersion is the payload_version of AuditEventType events.
const AuditPayloadVersion = 1

// AuditPayload is the JSON payload of an AuditEventType event: the fields
// of a ports.AuditRecord (convertible to and from it) under snake_case
// names. Consumers decode it as is.
type AuditPayload struct {
	Action        string    `json:"action"`
	Actor         string    `json:"actor"`
	ResourceType  string    `json:"resource_type"`
	ResourceID    string    `json:"resource_id"`
	Outcome       string    `json:"outcome"`
	Code          string    `json:"code"`
	Reason        string    `json:"reason"`
	Before        string    `json:"before"`
	After         string    `json:"after"`
	RequestID     string    `json:"request_id"`
	CorrelationID string    `json:"correlation_id"`
	At            time.Time `json:"at"`
	Origin        string    `json:"origin,omitempty"` // "user@host" of a CLI; absent for API requests
}

// NewAuditEvent builds the AuditEventType event of p, keyed by its
// resource; the payload's at is in UTC. p.RequestID must be set (CorrelationID defaults to it). It
// returns a *ValidationError when p cannot form an event (empty resource
// type or id, non-ASCII ids).
func NewAuditEvent(p AuditPayload, eventID string, now time.Time) (Event, error) {
	if p.At.IsZero() {
		p.At = now
	}
	p.At = p.At.UTC() // the payload reads the same whatever the producer's time zone
	return New(NewParams{
		EventID:        eventID,
		EventType:      AuditEventType,
		PayloadVersion: AuditPayloadVersion,
		AggregateType:  p.ResourceType,
		AggregateID:    p.ResourceID,
		ResourceType:   p.ResourceType,
		ResourceID:     p.ResourceID,
		RequestID:      p.RequestID,
		CorrelationID:  p.CorrelationID,
		Payload:        p,
		Now:            now,
	})
}
