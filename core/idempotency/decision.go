package idempotency

import (
	"time"

	"github.com/july/template/core/lease"
)

// State is an idempotency record's lifecycle, stored as a smallint.
type State int16

const (
	// StateInProgress is a record whose first request is still running under
	// Record.Lease.
	StateInProgress State = 1
	// StateCompleted is a record whose outcome (status and result) is stored
	// and is replayed to every retry.
	StateCompleted State = 2
)

// Record is the stored idempotency fact for one Scope and Key. Adapters keep
// it in the business table or their own table, unique on (Scope, Key).
type Record struct {
	// Scope and Key identify the command.
	Scope Scope
	Key   string
	// Fingerprint is the first request's fingerprint.
	Fingerprint Fingerprint
	// State is where the first request is.
	State State
	// Lease bounds how long an in-progress record blocks retries.
	Lease lease.Lease
	// ResponseStatus is the HTTP status to replay once completed.
	ResponseStatus int
	// ResultRef points at the stored result (a resource id or stored body).
	ResultRef string
}

// Decision is what to do with an incoming request given the existing record.
type Decision int

const (
	// DecisionNew: no record exists. Insert one as in progress (the unique
	// constraint decides between concurrent first requests) and run.
	DecisionNew Decision = iota + 1
	// DecisionReplay: same fingerprint and completed. Do not run again;
	// answer with the stored status and result, marked as a replay.
	DecisionReplay
	// DecisionReused: a different fingerprint, whatever the state. Change
	// nothing and answer ErrKeyReused (422).
	DecisionReused
	// DecisionInProgress: same fingerprint, the first request holds a live
	// lease. Answer ErrInProgress (409, retryable).
	DecisionInProgress
	// DecisionTakeover: same fingerprint, in progress, but its lease expired
	// or was released without completing. The caller may claim the lease
	// (lease.Lease.Claim, with a fenced conditional update so only one
	// claimant wins) and run the work again; the work must still be
	// idempotent on its own business keys, since the first attempt may have
	// partly happened.
	DecisionTakeover
)

// String returns the decision's name for logs and metrics.
func (d Decision) String() string {
	switch d {
	case DecisionNew:
		return "new"
	case DecisionReplay:
		return "replay"
	case DecisionReused:
		return "reused"
	case DecisionInProgress:
		return "in_progress"
	case DecisionTakeover:
		return "takeover"
	}
	return "unknown"
}

// Err returns ErrKeyReused for DecisionReused, ErrInProgress for
// DecisionInProgress and nil for the decisions that proceed.
func (d Decision) Err() error {
	switch d {
	case DecisionReused:
		return ErrKeyReused
	case DecisionInProgress:
		return ErrInProgress
	}
	return nil
}

// Decide says what an incoming request with fingerprint incoming means, given
// the record already stored for its scope and key (nil when none) at now.
//
// The fingerprint is compared first: a different fingerprint is Reused even
// while the first request runs, so a reused key never waits and never
// replays someone else's answer. Fingerprints of different versions never
// match, so compute incoming with the stored record's version (see
// InVersion and Fingerprinter.Version). A record in an unknown state is treated as in
// progress: nothing is replayed or rerun until someone looks at it.
func Decide(existing *Record, incoming Fingerprint, now time.Time) Decision {
	switch {
	case existing == nil:
		return DecisionNew
	case !existing.Fingerprint.Equal(incoming):
		return DecisionReused
	case existing.State == StateCompleted:
		return DecisionReplay
	case existing.State == StateInProgress && existing.Lease.Claimable(now):
		return DecisionTakeover
	}
	return DecisionInProgress
}
