package outbox

import (
	"fmt"
	"time"

	"github.com/july/template/core/lease"
)

// The lease rules below (Claim, Renew, Complete, Fail, and Recover in
// lease.go) are repeated in SQL by adapters/postgres/pgoutbox/relay.go
// (claimSQL, heldSQL/liveSQL, releaseSQL, recoverSQL); adapters/memory
// runs these functions instead. contracttests.RunOutboxStore runs against
// both stores and holds the two forms together: change both.

// Claim leases a due Pending event to owner until now+ttl with the next
// fencing token and moves it to Delivering. It returns a *TransitionError
// when ev is not Pending, ErrNotDue before NextAttemptAt, and lease.ErrInvalid
// for an empty owner or a ttl outside (0, lease.MaxTTL].
func Claim(ev Event, owner string, now time.Time, ttl time.Duration) (Event, error) {
	if err := Transition(ev.Status, Delivering); err != nil {
		return ev, err
	}
	if now.Before(ev.NextAttemptAt) {
		return ev, fmt.Errorf("claim event %s: %w until %s", ev.EventID, ErrNotDue, ev.NextAttemptAt.Format(time.RFC3339Nano))
	}
	l, err := ev.Lease.Claim(owner, now, ttl)
	if err != nil {
		return ev, fmt.Errorf("claim event %s: %w", ev.EventID, err)
	}
	ev.Status, ev.Lease, ev.UpdatedAt = Delivering, l, now
	return ev, nil
}

// Renew extends the lease of owner/token to now+ttl. Errors are CanRenew's,
// plus lease.ErrInvalid for a bad ttl.
func Renew(ev Event, owner string, token int64, now time.Time, ttl time.Duration) (Event, error) {
	if err := CanRenew(ev, owner, token, now); err != nil {
		return ev, err
	}
	l, err := ev.Lease.Renew(owner, token, now, ttl)
	if err != nil {
		return ev, fmt.Errorf("renew event %s: %w", ev.EventID, err)
	}
	ev.Lease, ev.UpdatedAt = l, now
	return ev, nil
}

// Complete marks ev delivered by owner/token at now and frees the lease.
// Errors are CanComplete's.
func Complete(ev Event, owner string, token int64, now time.Time) (Event, error) {
	if err := CanComplete(ev, owner, token, now); err != nil {
		return ev, err
	}
	ev.Status = Delivered
	ev.DeliveredAt = &now
	ev.Lease = lease.Lease{Token: ev.Lease.Token}
	ev.UpdatedAt = now
	return ev, nil
}

// Fail applies d, from Policy.OnFailure, to ev for owner/token at now and
// frees the lease. Errors are CanFail's, or a *TransitionError when d.Status
// is neither Pending nor Failed.
func Fail(ev Event, owner string, token int64, d FailureDecision, now time.Time) (Event, error) {
	if err := CanFail(ev, owner, token, now); err != nil {
		return ev, err
	}
	if err := Transition(ev.Status, d.Status); err != nil || d.Status == Delivered {
		return ev, &TransitionError{From: ev.Status, To: d.Status}
	}
	ev.Status = d.Status
	ev.RetryCount = d.RetryCount
	ev.NextAttemptAt = d.NextAttemptAt
	ev.LastErrorCode, ev.LastErrorMessage = d.Code, d.Message
	ev.Lease = lease.Lease{Token: ev.Lease.Token}
	ev.UpdatedAt = now
	return ev, nil
}
