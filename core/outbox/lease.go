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

// Recover returns an expired Delivering event to Pending, due at now. It
// keeps EventID, payload, request and correlation ids and RetryCount (a lost
// lease is a crashed worker, not a failed enqueue), clears the lease owner
// and keeps the fencing token so the next claim gets a larger one. It
// returns a *TransitionError when ev is not Delivering and lease.ErrHeld
// while the lease is still live.
func Recover(ev Event, now time.Time) (Event, error) {
	if ev.Status != Delivering { // Failed -> Pending is a replay, not a recovery
		return ev, &TransitionError{From: ev.Status, To: Pending}
	}
	if !ev.Lease.Claimable(now) {
		return ev, fmt.Errorf("recover event %s: %w (owner %q until %s)", ev.EventID, lease.ErrHeld, ev.Lease.Owner, ev.Lease.ExpiresAt.Format(time.RFC3339Nano))
	}
	ev.Status = Pending
	ev.NextAttemptAt = now
	ev.Lease = lease.Lease{Token: ev.Lease.Token}
	ev.UpdatedAt = now
	return ev, nil
}
