package outbox

import (
	"fmt"
	"slices"
)

// Status is an event's relay lifecycle state, stored as smallint in
// tb_outbox_event.status. It is internal to the relay and is not the
// five-state user-facing task status.
type Status int16

const (
	// Pending events wait for NextAttemptAt and are then claimable (1 待投递).
	Pending Status = 1
	// Delivering events are leased to one relay worker (2 投递中).
	Delivering Status = 2
	// Delivered events were accepted by the queue (3 已投递). Terminal: a
	// consumer's final failure is a ConsumerFailureRecord beside the row and
	// never changes it.
	Delivered Status = 3
	// Failed events need an operator (4 投递失败): the relay could not
	// enqueue them (attempts ran out, a permanent error, or every holder
	// died: LEASE_EXPIRED). Kept for alerting and controlled replay, never
	// deleted.
	Failed Status = 4
)

// String returns the lowercase name of s, or "status(n)" when s is unknown.
func (s Status) String() string {
	switch s {
	case Pending:
		return "pending"
	case Delivering:
		return "delivering"
	case Delivered:
		return "delivered"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("status(%d)", int16(s))
}

// Valid reports whether s is one of the four defined states.
func (s Status) Valid() bool { return s >= Pending && s <= Failed }

// next is the whole state machine (docs/architecture.md draws it).
// Delivered has no entry: it is terminal, and a consumer's failure is
// recorded beside the row (ConsumerFailureRecord), never as a status.
var next = map[Status][]Status{
	Pending:    {Delivering},                 // claim
	Delivering: {Delivered, Pending, Failed}, // success; retry, recovery or release; final failure
	Failed:     {Pending},                    // controlled replay
}

// TransitionError reports a status change the state machine forbids.
type TransitionError struct {
	From, To Status
}

// Error implements error.
func (e *TransitionError) Error() string {
	return fmt.Sprintf("outbox status %s -> %s not allowed: reload the event and check its current status", e.From, e.To)
}

// Transition returns nil when an event may move from one status to another
// and a *TransitionError otherwise. Staying in the same status is not a
// transition and is refused.
func Transition(from, to Status) error {
	if slices.Contains(next[from], to) {
		return nil
	}
	return &TransitionError{From: from, To: to}
}
