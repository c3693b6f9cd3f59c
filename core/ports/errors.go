package ports

import "errors"

// A lost lease (released, expired and taken over, or a stale fencing
// token) is lease.ErrLost: one name in core and adapters alike.
var (
	// ErrNotFound is returned when a lookup by key matches nothing.
	ErrNotFound = errors.New("not found")
	// ErrConflict is returned when a write collides with existing state,
	// e.g. a duplicate unique key.
	ErrConflict = errors.New("conflict")
	// ErrUnavailable wraps failures of a backing service (connection refused,
	// timeout). Callers may retry later; nothing was changed.
	ErrUnavailable = errors.New("backing service unavailable")
	// ErrTaskActive is returned when a queued task cannot be changed because
	// its consumer is running it; retry when the consumer has finished.
	ErrTaskActive = errors.New("task is running in its consumer")
)
