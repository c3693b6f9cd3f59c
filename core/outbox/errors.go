package outbox

import (
	"errors"
	"fmt"
)

var (
	// ErrPayloadNotStructured is wrapped by the *ValidationError returned when
	// a payload is not a struct, a pointer to a struct or a string-keyed map,
	// or does not encode to a JSON object. Pre-encoded bytes are refused so a
	// payload is never marshalled twice (the Base64 regression).
	ErrPayloadNotStructured = errors.New("payload must be a struct or a map with string keys")
	// ErrPayloadTooLarge is wrapped by the *ValidationError returned when the
	// encoded payload exceeds MaxPayloadBytes.
	ErrPayloadTooLarge = errors.New("payload too large")
	// ErrNotDue is returned by Claim when a pending event's NextAttemptAt is
	// still in the future.
	ErrNotDue = errors.New("event not due")
	// ErrNotReplayable is returned by CanReplay and Replay for events that are
	// neither failed nor stuck; delivered events are never replayed.
	ErrNotReplayable = errors.New("event not replayable")
)

// ValidationError reports one invalid field of an event, envelope or replay
// request. Field is the contract (column or JSON) name, so transports can
// map it to error details directly.
type ValidationError struct {
	// Field is the snake_case field name, e.g. "event_type" or "payload".
	Field string
	// Reason says what is wrong and what a valid value looks like.
	Reason string
	// Err is an optional sentinel or cause (e.g. ErrPayloadTooLarge).
	Err error
}

// Error implements error.
func (e *ValidationError) Error() string {
	return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason)
}

// Unwrap returns the wrapped sentinel or cause, if any.
func (e *ValidationError) Unwrap() error { return e.Err }
