package ports

import (
	"errors"

	"github.com/july/template/core/lease"
)

var (
	// ErrNotFound is returned when a lookup by key matches nothing.
	ErrNotFound = errors.New("not found")
	// ErrConflict is returned when a write collides with existing state,
	// e.g. a duplicate unique key.
	ErrConflict = errors.New("conflict")
	// ErrLeaseLost is returned when the caller no longer holds the lease it
	// acts under (released, expired and taken over, or a stale fencing token).
	// It is lease.ErrLost, so errors.Is works across core and adapters.
	ErrLeaseLost = lease.ErrLost
	// ErrUnavailable wraps failures of a backing service (connection refused,
	// timeout). Callers may retry later; nothing was changed.
	ErrUnavailable = errors.New("backing service unavailable")
	// ErrTaskActive is returned when a queued task cannot be changed because
	// its consumer is running it; retry when the consumer has finished.
	ErrTaskActive = errors.New("task is running in its consumer")
)
