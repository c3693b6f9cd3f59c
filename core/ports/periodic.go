package ports

import (
	"context"
	"time"

	"github.com/july/template/core/outbox"
)

// PeriodicDecideFunc decides one pass of a periodic command from its
// cursor (every occurrence at or before it is decided): the events to
// append and the new cursor.
type PeriodicDecideFunc func(cursor time.Time) (events []outbox.Event, next time.Time, err error)

// PeriodicAdvance is what one PeriodicCommandStore.Advance did.
type PeriodicAdvance struct {
	// Created: the command had no state; its cursor now starts at now,
	// or at the store's own clock when that is behind now (a caller whose
	// clock is fast must not skip occurrences for every caller), and decide was not called (a new command begins with its next
	// occurrence, it does not replay the past).
	Created bool
	// Busy: another caller holds the command's state right now (it is
	// doing this pass's work); nothing was done.
	Busy bool
	// Appended are the events appended; Existing those whose event_id was
	// already stored (counted as committed, not appended again).
	Appended, Existing int
}

// PeriodicCommandStore keeps each periodic command's cursor next to the
// outbox, so that any number of relays commit each occurrence once.
type PeriodicCommandStore interface {
	// Advance is one atomic step for command: lock its state (or create
	// it at now), call decide with its cursor, append the events decide
	// returns as Pending outbox events and store the new cursor, all in
	// one transaction. An error from decide or from a write stores
	// nothing. A cursor decide moves backwards is an error.
	Advance(ctx context.Context, command string, now time.Time, decide PeriodicDecideFunc) (PeriodicAdvance, error)
}
