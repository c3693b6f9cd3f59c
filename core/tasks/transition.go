package tasks

import (
	"errors"
	"fmt"
	"slices"
)

// ErrTerminal matches (via errors.Is) every *TransitionError and *StatusError
// raised on a task that is already Completed, Failed or Cancelled. A
// duplicate handler that sees it must ack and stop without side effects.
var ErrTerminal = errors.New("task already finished")

// next is the whole state machine: every legal move, and nothing else.
var next = map[Status][]Status{
	Pending:    {Processing, Cancelled},
	Processing: {Completed, Failed, Cancelled, Pending}, // Pending: an expired lease is recovered
}

// Transition reports whether a task may move from one status to another. It
// returns a *TransitionError for every move not in the table, including any
// move out of a terminal state and staying in the same state.
func Transition(from, to Status) error {
	if slices.Contains(next[from], to) {
		return nil
	}
	return &TransitionError{From: from, To: to}
}

// TransitionError is returned when a status change is not in the table.
// It matches ErrTerminal when From is terminal.
type TransitionError struct {
	From Status
	To   Status
}

// Error implements error.
func (e *TransitionError) Error() string {
	if e.From.Terminal() {
		return fmt.Sprintf("task status cannot move from %s to %s: %s is terminal", e.From, e.To, e.From)
	}
	return fmt.Sprintf("task status cannot move from %s to %s: re-read the task and act on its current status", e.From, e.To)
}

// Unwrap returns ErrTerminal when the task was already finished.
func (e *TransitionError) Unwrap() error {
	if e.From.Terminal() {
		return ErrTerminal
	}
	return nil
}

// StatusError is returned when an operation that is not a status change
// (renew, record progress, recover) is asked of a task in the wrong status.
// It matches ErrTerminal when Status is terminal.
type StatusError struct {
	// Op is the operation, e.g. "renew".
	Op string
	// Status is the task's current status.
	Status Status
	// Want is the status the operation requires.
	Want Status
}

// Error implements error.
func (e *StatusError) Error() string {
	return fmt.Sprintf("%s task: status is %s, want %s", e.Op, e.Status, e.Want)
}

// Unwrap returns ErrTerminal when the task was already finished.
func (e *StatusError) Unwrap() error {
	if e.Status.Terminal() {
		return ErrTerminal
	}
	return nil
}
