package queue

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/july/template/core/ports"
)

// ErrEmptyTaskType is returned by EnqueueTask when the task type is blank.
var ErrEmptyTaskType = errors.New("asynq queue: task type is empty; pass the event or task name, e.g. \"order.created\"")

// PayloadError is returned by EnqueueTask when the payload is not a struct,
// a pointer to a struct or a string-keyed map, or does not encode to a JSON
// object. It wraps the *outbox.ValidationError, so
// errors.Is(err, outbox.ErrPayloadNotStructured) reports the type refusal.
// Retrying cannot fix it (Permanent reports true).
type PayloadError struct {
	// TaskType is the type the caller tried to enqueue.
	TaskType string
	// Err is the validation error from outbox.MarshalPayload.
	Err error
}

// Error implements error.
func (e *PayloadError) Error() string {
	return fmt.Sprintf("asynq queue: enqueue %s: %v", e.TaskType, e.Err)
}

// Unwrap returns the validation error.
func (e *PayloadError) Unwrap() error { return e.Err }

// Permanent reports true: the same payload is refused every time.
func (e *PayloadError) Permanent() bool { return true }

// ErrorCode returns "PAYLOAD_INVALID".
func (e *PayloadError) ErrorCode() string { return "PAYLOAD_INVALID" }

// UnavailableError is returned when Redis could not take a task: it was
// unreachable, timed out, or answered with an error. It wraps
// ports.ErrUnavailable and the cause, is transient under outbox.Classify and
// carries the code "QUEUE_UNAVAILABLE". Its message names only the kind of
// failure, never the Redis address or raw server text; use errors.Unwrap
// chains (e.g. errors.As for *net.OpError) for details.
type UnavailableError struct {
	// Op is what failed, e.g. "enqueue order.created".
	Op string
	// Reason is a short, safe description such as "connection failed".
	Reason string
	// Err is the underlying cause; it is not printed.
	Err error
}

// Error implements error.
func (e *UnavailableError) Error() string {
	return "asynq queue: " + e.Op + ": queue unavailable (" + e.Reason + "); retry later"
}

// Unwrap returns ports.ErrUnavailable and the cause.
func (e *UnavailableError) Unwrap() []error { return []error{ports.ErrUnavailable, e.Err} }

// Permanent reports false: a later attempt may reach the queue.
func (e *UnavailableError) Permanent() bool { return false }

// ErrorCode returns "QUEUE_UNAVAILABLE".
func (e *UnavailableError) ErrorCode() string { return "QUEUE_UNAVAILABLE" }

func unavailable(op string, err error) *UnavailableError {
	return &UnavailableError{Op: op, Reason: reasonOf(err), Err: err}
}

// reasonOf names the kind of failure without echoing the error text, which
// can carry host names and ports.
func reasonOf(err error) string {
	var (
		ne net.Error
		oe *net.OpError
	)
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	case errors.As(err, &oe):
		return "connection failed"
	}
	return "redis error"
}
