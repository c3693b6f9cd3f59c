package idempotency

import "fmt"

// Outcome classifies a conditional update ("UPDATE ... WHERE id = ? AND
// status = ?") that touched no row, after the adapter re-read the row.
type Outcome int

const (
	// OutcomeAlreadyDone: the row is already in the target status, moved
	// there by an earlier attempt. Treat as success; cause no side effect
	// again.
	OutcomeAlreadyDone Outcome = iota + 1
	// OutcomeIllegalTransition: the row is in another status. Either the
	// move from it to the target is not allowed, or it is allowed but the
	// caller acted on a stale read (IllegalTransitionError.Stale).
	OutcomeIllegalTransition
	// OutcomeNotVisible: the row does not exist or the caller may not see
	// it. Both give the same answer so existence is never revealed.
	OutcomeNotVisible
)

// String returns the outcome's name for logs.
func (o Outcome) String() string {
	switch o {
	case OutcomeAlreadyDone:
		return "already_done"
	case OutcomeIllegalTransition:
		return "illegal_transition"
	case OutcomeNotVisible:
		return "not_visible"
	}
	return "unknown"
}

// IllegalTransitionError reports a conditional update that missed because
// the row is in another status. It matches ErrIllegalTransition.
type IllegalTransitionError struct {
	// Expected is the status the update required.
	Expected int16
	// Current is the status found on re-read.
	Current int16
	// Target is the status the update tried to set.
	Target int16
	// Stale is true when moving from Current to Target is allowed: the
	// caller's read was out of date, and it may re-read and decide again.
	// False means the move is not allowed from the current status at all.
	Stale bool
}

// Error implements error.
func (e *IllegalTransitionError) Error() string {
	if e.Stale {
		return fmt.Sprintf("status changed from %d to %d before the update to %d: re-read and retry", e.Expected, e.Current, e.Target)
	}
	return fmt.Sprintf("illegal status transition from %d to %d (expected %d)", e.Current, e.Target, e.Expected)
}

// Is makes errors.Is(err, ErrIllegalTransition) true.
func (e *IllegalTransitionError) Is(target error) bool { return target == ErrIllegalTransition }

// ResolveNoRow classifies a conditional update from expectedFrom to target
// that touched no row. current is the status re-read with the same
// visibility rules as the update (nil when no row is visible); allowed is the
// caller's transition table (nil allows nothing). The error is ErrAlreadyDone,
// an *IllegalTransitionError or ErrNotVisible, matching the Outcome, so
// callers can switch on either.
//
// S is any smallint-backed status, such as tasks.Status or an outbox status.
func ResolveNoRow[S ~int16](current *S, expectedFrom, target S, allowed func(from, to S) bool) (Outcome, error) {
	switch {
	case current == nil:
		return OutcomeNotVisible, ErrNotVisible
	case *current == target:
		return OutcomeAlreadyDone, ErrAlreadyDone
	}
	return OutcomeIllegalTransition, &IllegalTransitionError{
		Expected: int16(expectedFrom),
		Current:  int16(*current),
		Target:   int16(target),
		Stale:    allowed != nil && allowed(*current, target),
	}
}
