package outbox

import (
	"fmt"
	"time"

	"github.com/july/template/core/lease"
)

// LeaseExpired reports whether ev is Delivering and its lease has run out at
// now (now == ExpiresAt counts as expired), or it is Delivering with no
// lease at all. Such a row is what the recovery scan looks for.
func LeaseExpired(ev Event, now time.Time) bool {
	return ev.Status == Delivering && ev.Lease.Claimable(now)
}

// CanComplete returns nil when owner, holding fencing token, may mark ev
// delivered at now. It returns a *TransitionError when ev is not Delivering,
// lease.ErrLost when another claim superseded the caller (or the lease was
// released), and lease.ErrExpired when the caller's lease ran out.
func CanComplete(ev Event, owner string, token int64, now time.Time) error {
	return holds(ev, owner, token, now, Delivered)
}

// CanFail is CanComplete for recording a failed attempt (retry or final).
func CanFail(ev Event, owner string, token int64, now time.Time) error {
	return holds(ev, owner, token, now, Failed)
}

// CanRenew is CanComplete for extending the lease.
func CanRenew(ev Event, owner string, token int64, now time.Time) error {
	return holds(ev, owner, token, now, Delivering)
}

func holds(ev Event, owner string, token int64, now time.Time, to Status) error {
	if ev.Status != Delivering {
		return &TransitionError{From: ev.Status, To: to}
	}
	if err := ev.Lease.Check(owner, token, now); err != nil {
		return fmt.Errorf("event %s held by %q token %d: %w", ev.EventID, owner, token, err)
	}
	return nil
}

// CodeLeaseExpired is the last_error_code of an event whose lease ran out
// while a relay held it: the holder stopped (crashed, was OOM-killed, lost
// the database) before it could complete or fail the event. The lost lease
// counts as a failed attempt, so an event that kills every relay that
// handles it ends Failed with this code after Policy.MaxAttempts.
const CodeLeaseExpired = "LEASE_EXPIRED"

// LeaseExpiredMessage is the last_error_message stored with
// CodeLeaseExpired. It holds nothing to redact.
const LeaseExpiredMessage = "the relay holding the lease stopped before finishing the delivery (crashed, killed or cut off from the database); the lease expired and the attempt counts as failed"

// OnLeaseExpired decides what recovering an expired lease does to an event
// that had retryCount failed attempts before the one whose holder died: it
// is OnFailure for a transient error coded CodeLeaseExpired. The lost lease
// counts as an attempt (retryCount+1); when that uses up MaxAttempts the
// event is Failed for good (Final, an alert is due), otherwise it is
// Pending again after Backoff.Delay(retryCount+1, rnd), so a crash loop is
// slowed down and the rows of one dead batch are spread over different
// claims instead of dying together again. rnd is a random number in
// [0, 1), drawn per event.
//
// pgoutbox's recoverSQL repeats this rule in SQL; change both together.
// contracttests.RunOutboxStore (RecoverExpired/...) runs against the
// memory store (which calls Recover) and pgoutbox, and holds them to one
// behaviour.
func (p Policy) OnLeaseExpired(retryCount int, now time.Time, rnd float64) FailureDecision {
	return p.OnFailure(retryCount, Transient(CodeLeaseExpired, LeaseExpiredMessage), now, rnd)
}

// Recover takes back an expired Delivering event at now and applies
// p.OnLeaseExpired(ev.RetryCount, now, rnd): RetryCount+1 and last error
// CodeLeaseExpired, then Pending due after the backoff, or Failed when
// that was its last attempt (check the returned Status). It keeps EventID,
// payload, request and correlation ids, clears the lease owner and keeps
// the fencing token so the next claim gets a larger one. It returns a
// *TransitionError when ev is not Delivering and lease.ErrHeld while the
// lease is still live.
func Recover(ev Event, p Policy, now time.Time, rnd float64) (Event, error) {
	if ev.Status != Delivering { // Failed -> Pending is a replay, not a recovery
		return ev, &TransitionError{From: ev.Status, To: Pending}
	}
	if !ev.Lease.Claimable(now) {
		return ev, fmt.Errorf("recover event %s: %w (owner %q until %s)", ev.EventID, lease.ErrHeld, ev.Lease.Owner, ev.Lease.ExpiresAt.Format(time.RFC3339Nano))
	}
	d := p.OnLeaseExpired(ev.RetryCount, now, rnd)
	ev.Status = d.Status
	ev.RetryCount = d.RetryCount
	ev.NextAttemptAt = d.NextAttemptAt
	ev.LastErrorCode, ev.LastErrorMessage = d.Code, d.Message
	ev.Lease = lease.Lease{Token: ev.Lease.Token}
	ev.UpdatedAt = now
	return ev, nil
}
