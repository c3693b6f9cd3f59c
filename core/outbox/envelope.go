package outbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Envelope is the public event envelope the relay hands to the queue and
// consumers decode. Payload is json.RawMessage, so marshalling the Envelope
// embeds the payload object verbatim instead of Base64-encoding bytes.
// Consumers must ignore unknown fields: the envelope may grow.
type Envelope struct {
	EventID        string    `json:"event_id"`
	EventType      string    `json:"event_type"`
	PayloadVersion int       `json:"payload_version"`
	AggregateType  string    `json:"aggregate_type"`
	AggregateID    string    `json:"aggregate_id"`
	ResourceType   string    `json:"resource_type"`
	ResourceID     string    `json:"resource_id"`
	BusinessKey    string    `json:"business_key,omitempty"`
	RequestID      string    `json:"request_id"`
	CorrelationID  string    `json:"correlation_id"`
	OccurredAt     time.Time `json:"occurred_at"`
	// Ordered is set on an ordered event (NewParams.Ordered): the relay
	// publishes the next event of its aggregate only after this one's
	// consumption is recorded, so a consumer that fails it holds them.
	Ordered bool `json:"ordered,omitempty"`
	// TraceParent and TraceState are the W3C trace context of the span that
	// wrote the event, kept through retries and replays; consumers link
	// their span to it. Empty when the writer was not traced.
	TraceParent string          `json:"traceparent,omitempty"`
	TraceState  string          `json:"tracestate,omitempty"`
	Payload     json.RawMessage `json:"payload"`
}

// Envelope returns the public envelope of ev. OccurredAt is ev.CreatedAt,
// the time of the business fact; the payload bytes are copied.
func (ev Event) Envelope() Envelope {
	return Envelope{
		EventID:        ev.EventID,
		EventType:      ev.EventType,
		PayloadVersion: ev.PayloadVersion,
		AggregateType:  ev.AggregateType,
		AggregateID:    ev.AggregateID,
		ResourceType:   ev.ResourceType,
		ResourceID:     ev.ResourceID,
		BusinessKey:    ev.BusinessKey,
		RequestID:      ev.RequestID,
		CorrelationID:  ev.CorrelationID,
		OccurredAt:     ev.CreatedAt,
		Ordered:        ev.Ordered,
		TraceParent:    ev.TraceParent,
		TraceState:     ev.TraceState,
		Payload:        slices.Clone(ev.Payload),
	}
}

// DecodeEnvelope parses a queued envelope. It returns a *ValidationError when
// event_id, event_type or payload_version is invalid, and one wrapping
// ErrPayloadNotStructured when payload is missing or not a JSON object, e.g.
// a JSON string left by marshalling the payload twice (the Base64
// regression). Unknown fields are ignored.
func DecodeEnvelope(data []byte) (Envelope, error) {
	var env Envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return Envelope{}, fmt.Errorf("decode outbox envelope: %w", err)
	}
	if err := env.Validate(); err != nil {
		return Envelope{}, err
	}
	return env, nil
}

// Validate returns the *ValidationError of the first invalid field: an
// event_id that is not a canonical uuid, a malformed event_type, a
// payload_version below 1, or a payload that is not a JSON object (e.g. one
// marshalled twice). Publishers call it before enqueueing; DecodeEnvelope
// calls it on what consumers receive.
func (env Envelope) Validate() error {
	for _, err := range []error{
		checkEventID(env.EventID),
		checkEventType(env.EventType),
		checkVersion(env.PayloadVersion),
		checkPayloadObject(env.Payload),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// Decode unmarshals the payload into dst, typically a pointer to the
// event type's payload struct for env.PayloadVersion. It refuses a payload
// that is not a JSON object like DecodeEnvelope does.
func (env Envelope) Decode(dst any) error {
	if err := checkPayloadObject(env.Payload); err != nil {
		return err
	}
	if err := json.Unmarshal(env.Payload, dst); err != nil {
		return fmt.Errorf("decode %s v%d payload of event %s: %w", env.EventType, env.PayloadVersion, env.EventID, err)
	}
	return nil
}

func checkPayloadObject(p json.RawMessage) error {
	if !isObject(p) {
		return &ValidationError{
			Field:  "payload",
			Reason: fmt.Sprintf("starts with %.20q, not a json object; the producer may have marshalled it twice", bytes.TrimSpace(p)),
			Err:    ErrPayloadNotStructured,
		}
	}
	return nil
}
