package outbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/july/template/core/lease"
)

// Field limits. Stores size their columns at least this large.
const (
	// MaxEventTypeLen bounds event_type.
	MaxEventTypeLen = 100
	// MaxTypeLen bounds aggregate_type and resource_type.
	MaxTypeLen = 64
	// MaxIDLen bounds aggregate_id, resource_id, business_key, request_id and
	// correlation_id.
	MaxIDLen = 128
	// MaxPayloadBytes bounds the encoded JSON payload (256 KiB): an event
	// carries the facts a consumer needs, not a whole business object.
	MaxPayloadBytes = 256 << 10
	// MaxTraceParentLen and MaxTraceStateLen bound trace_parent and
	// trace_state (W3C Trace Context: 55 bytes for version 00, tracestate
	// at most 512).
	MaxTraceParentLen = 64
	MaxTraceStateLen  = 512
)

// Delayed events (NewParams.NotBefore).
const (
	// NotBeforeTolerance is how far in the past a not-before time may lie:
	// a caller's clock and a slow request, not a back-dated event.
	NotBeforeTolerance = time.Minute
	// MaxDelay bounds how far ahead an event may be delayed. Work further
	// off belongs in a periodic command that appends its event when due:
	// a year-old pending row outlives schema and payload versions.
	MaxDelay = 366 * 24 * time.Hour
)

const nilUUID = "00000000-0000-0000-0000-000000000000"

// Event is one row of tb_outbox_event. Field comments name the column.
type Event struct {
	ID             int64  // id; assigned by the store, 0 before insert
	EventID        string // event_id; canonical lowercase UUID, never regenerated
	EventType      string // event_type, e.g. "topup.created"
	PayloadVersion int    // payload_version, >= 1
	AggregateType  string // aggregate_type
	AggregateID    string // aggregate_id
	ResourceType   string // resource_type
	ResourceID     string // resource_id
	BusinessKey    string // business_key; optional
	RequestID      string // request_id; the entry command's id
	CorrelationID  string // correlation_id; the business chain's id
	// TraceParent and TraceState are trace_parent and trace_state: the W3C
	// trace context of the span that wrote the event (empty when tracing is
	// off). Plain strings: core never parses them; the tracing adapters do.
	// They are kept through retries, recoveries and replays.
	TraceParent string
	TraceState  string
	// Payload is payload (jsonb): a JSON object produced by New, or read back
	// by a store. Never build it by hand.
	Payload          json.RawMessage
	Status           Status      // status
	RetryCount       int         // retry_count; failed attempts so far
	NextAttemptAt    time.Time   // next_attempt_at; claimable from this instant
	Lease            lease.Lease // lease_owner, lease_expires_at and the fencing token
	LastErrorCode    string      // last_error_code
	LastErrorMessage string      // last_error_message; redacted by the caller
	CreatedAt        time.Time   // created_at; also the envelope's occurred_at
	// NotBefore is not_before: a delayed event is not published before it.
	// Zero for an event due at CreatedAt.
	NotBefore time.Time
	// Ordered is ordered: the event is published only after the previous
	// ordered event of its aggregate (AggregateType+AggregateID, by ID) is
	// delivered and consumed (NewParams.Ordered).
	Ordered     bool
	UpdatedAt   time.Time  // updated_at
	DeliveredAt *time.Time // delivered_at; nil until delivered
}

// NewParams are the arguments to New. EventID and Now come from the caller
// because core generates no ids and reads no clock.
type NewParams struct {
	EventID        string
	EventType      string
	PayloadVersion int
	AggregateType  string
	AggregateID    string
	ResourceType   string
	ResourceID     string
	BusinessKey    string // optional
	RequestID      string
	// CorrelationID defaults to RequestID when empty: a chain that starts
	// here is identified by its entry command.
	CorrelationID string
	// TraceParent and TraceState are optional: the store's append fills
	// them from the active span when they are empty.
	TraceParent string
	TraceState  string
	// Payload is a struct, a pointer to a struct or a map with string keys.
	// It is marshalled exactly once, here.
	Payload any
	Now     time.Time
	// NotBefore, when set, delays the event: the relay leaves it alone
	// until then (a reminder, a timeout). At most NotBeforeTolerance in the
	// past (then the event is simply due now) and at most MaxDelay ahead.
	NotBefore time.Time
	// Ordered delivers the event in order within its aggregate: it is not
	// published while an earlier ordered event of the same AggregateType and
	// AggregateID is undelivered or unconsumed, so a consumer never sees
	// card.suspended before card.activated. Decide it per event type (every
	// event of an ordered type sets it: OrderedTypes) and leave it off for
	// facts that stand alone, which keep the relay's full parallelism.
	// "Earlier" is the order of Append: the store serialises the writers of
	// one aggregate's ordered events, so it is also their commit order.
	Ordered bool
}

// OrderedTypes names a domain's event types delivered in order per
// aggregate (NewParams.Ordered), so the choice is made once per type.
type OrderedTypes map[string]bool

// NewOrderedTypes returns the set of types.
func NewOrderedTypes(types ...string) OrderedTypes {
	o := make(OrderedTypes, len(types))
	for _, t := range types {
		o[t] = true
	}
	return o
}

// Has reports whether events of eventType are ordered.
func (o OrderedTypes) Has(eventType string) bool { return o[eventType] }

// DueAt is when the event first became due: NotBefore for a delayed event,
// else CreatedAt. Delivery lag and backlog ages count from it, so an event
// that is merely not yet due never looks late.
func (e Event) DueAt() time.Time {
	if e.NotBefore.After(e.CreatedAt) {
		return e.NotBefore
	}
	return e.CreatedAt
}

// New validates p and returns a Pending event due at p.Now. It returns every
// problem found, joined; each is a *ValidationError whose Field is the column
// name (payload problems also wrap ErrPayloadNotStructured or
// ErrPayloadTooLarge).
func New(p NewParams) (Event, error) {
	if p.CorrelationID == "" {
		p.CorrelationID = p.RequestID
	}
	errs := []error{
		checkEventID(p.EventID),
		checkEventType(p.EventType),
		checkVersion(p.PayloadVersion),
		checkText("aggregate_type", p.AggregateType, MaxTypeLen, true),
		checkText("aggregate_id", p.AggregateID, MaxIDLen, true),
		checkText("resource_type", p.ResourceType, MaxTypeLen, true),
		checkText("resource_id", p.ResourceID, MaxIDLen, true),
		checkText("business_key", p.BusinessKey, MaxIDLen, false),
		checkText("request_id", p.RequestID, MaxIDLen, true),
		checkText("correlation_id", p.CorrelationID, MaxIDLen, true),
		CheckTraceContext(p.TraceParent, p.TraceState),
	}
	if p.Now.IsZero() {
		errs = append(errs, &ValidationError{Field: "created_at", Reason: "now is zero; pass the current time"})
	}
	errs = append(errs, checkNotBefore(p.NotBefore, p.Now))
	payload, err := MarshalPayload(p.Payload)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return Event{}, err
	}
	due := p.Now
	if p.NotBefore.After(p.Now) {
		due = p.NotBefore
	} else {
		p.NotBefore = time.Time{} // due now: not a delayed event
	}
	return Event{
		EventID:        p.EventID,
		EventType:      p.EventType,
		PayloadVersion: p.PayloadVersion,
		AggregateType:  p.AggregateType,
		AggregateID:    p.AggregateID,
		ResourceType:   p.ResourceType,
		ResourceID:     p.ResourceID,
		BusinessKey:    p.BusinessKey,
		RequestID:      p.RequestID,
		CorrelationID:  p.CorrelationID,
		TraceParent:    p.TraceParent,
		TraceState:     p.TraceState,
		Payload:        payload,
		Status:         Pending,
		NextAttemptAt:  due,
		NotBefore:      p.NotBefore,
		Ordered:        p.Ordered,
		CreatedAt:      p.Now,
		UpdatedAt:      p.Now,
	}, nil
}

func checkNotBefore(nb, now time.Time) error {
	switch {
	case nb.IsZero() || now.IsZero():
		return nil
	case nb.Before(now.Add(-NotBeforeTolerance)):
		return &ValidationError{Field: "not_before", Reason: fmt.Sprintf("is %s in the past (more than %s); leave it zero to publish now", now.Sub(nb).Round(time.Second), NotBeforeTolerance)}
	case nb.After(now.Add(MaxDelay)):
		return &ValidationError{Field: "not_before", Reason: fmt.Sprintf("is more than %d days ahead; schedule far-off work as a periodic command", MaxDelay/(24*time.Hour))}
	}
	return nil
}

func checkEventID(id string) error {
	if !isCanonicalUUID(id) || id == nilUUID {
		return &ValidationError{Field: "event_id", Reason: "must be a non-nil canonical lowercase uuid like 0b7e6f2a-5c1d-4e8f-9a3b-2c4d6e8f0a1b"}
	}
	return nil
}

func checkEventType(t string) error {
	if len(t) > MaxEventTypeLen || !IsEventType(t) {
		return &ValidationError{Field: "event_type", Reason: "must be lowercase dotted words like topup.created, at most 100 bytes"}
	}
	return nil
}

func checkVersion(v int) error {
	if v < 1 {
		return &ValidationError{Field: "payload_version", Reason: "must be 1 or greater"}
	}
	return nil
}

// checkText requires visible ASCII (0x21-0x7e): identifiers travel through
// logs, headers and queue metadata, where spaces and control bytes do harm.
func checkText(field, v string, maxLen int, required bool) error {
	switch {
	case v == "" && required:
		return &ValidationError{Field: field, Reason: "is empty; it is required"}
	case len(v) > maxLen:
		return &ValidationError{Field: field, Reason: "is longer than " + strconv.Itoa(maxLen) + " bytes"}
	}
	for i := range len(v) {
		if v[i] < 0x21 || v[i] > 0x7e {
			return &ValidationError{Field: field, Reason: "must be visible ascii without spaces or control characters"}
		}
	}
	return nil
}

// CheckTraceContext bounds a trace context to visible ASCII of its column
// sizes (a tracestate may hold spaces and commas, so only control bytes
// are refused there). Both are optional.
func CheckTraceContext(parent, state string) error {
	if err := checkText("trace_parent", parent, MaxTraceParentLen, false); err != nil {
		return err
	}
	if len(state) > MaxTraceStateLen {
		return &ValidationError{Field: "trace_state", Reason: "is longer than " + strconv.Itoa(MaxTraceStateLen) + " bytes"}
	}
	for i := range len(state) {
		if state[i] < 0x20 || state[i] > 0x7e {
			return &ValidationError{Field: "trace_state", Reason: "must be printable ascii"}
		}
	}
	return nil
}

// The relay validates every envelope it publishes, so these two checks
// are byte loops rather than regexps; match_internal_test.go fuzzes them
// against the patterns they implement.

// isCanonicalUUID matches ^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$.
func isCanonicalUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

// IsEventType reports whether s matches ^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$:
// two or more dot-separated words, each starting with a lowercase letter.
// Other dotted names (periodic command names) follow the same rule.
func IsEventType(s string) bool {
	words, start := 0, true
	for i := range len(s) {
		c := s[i]
		switch {
		case start:
			if c < 'a' || c > 'z' {
				return false
			}
			start = false
			words++
		case c == '.':
			start = true
		case (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_':
			return false
		}
	}
	return !start && words >= 2
}
