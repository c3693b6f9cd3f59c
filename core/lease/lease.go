// Package lease is the one time-bounded claim primitive shared by outbox
// rows, task rows and in-progress idempotency records.
//
// A lease has an owner, an expiry and a fencing token. The token grows by one
// with every new claim, so a holder whose lease expired and was taken over
// carries a stale token: stores compare both owner and token in the WHERE
// clause of every renew, complete or fail, and a stale holder touches nothing.
//
// A lease is valid while now is strictly before ExpiresAt; at the exact
// instant of expiry it is expired and may be claimed by anyone.
//
// This rule exists twice: here in Go (applied by core/outbox and
// core/tasks, and run as-is by the adapters/memory twins) and as SQL in
// the Postgres stores' WHERE clauses (claimSQL, heldSQL/liveSQL and
// releaseSQL in adapters/postgres/pgoutbox/relay.go; taskClaimSQL and
// taskHeldWhere in adapters/postgres/pgtasks/store.go). Change both
// together: contracttests.RunOutboxStore and contracttests.RunTaskStore
// run against the memory and the Postgres stores and hold the two forms
// to one behaviour (docs/architecture.md, "Rules stated twice").
package lease

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrHeld is returned by Claim when another live lease exists.
	ErrHeld = errors.New("lease held by another owner")
	// ErrLost is returned when the caller's owner or fencing token no longer
	// matches the row: the lease was released or taken over.
	ErrLost = errors.New("lease lost")
	// ErrExpired is returned when the caller still matches but the lease ran out.
	ErrExpired = errors.New("lease expired")
	// ErrInvalid is returned for an empty owner or a non-positive duration.
	ErrInvalid = errors.New("invalid lease request")
)

// MaxTTL bounds a single lease so a crashed holder cannot block a row for long.
const MaxTTL = time.Hour

// Lease is the lease state of one row. The zero value is "never claimed".
type Lease struct {
	// Owner is the holder's id (e.g. "relay-3f2a/loop-1"); empty when free.
	Owner string
	// Token is the fencing token of the latest claim; 0 when never claimed.
	Token int64
	// ExpiresAt is when the lease stops being valid; zero when free.
	ExpiresAt time.Time
}

// Free reports whether nobody holds the lease (released or never claimed).
func (l Lease) Free() bool { return l.Owner == "" }

// Expired reports whether a held lease has run out at now. A free lease is not
// "expired"; use Claimable to ask whether a new claim may be made.
func (l Lease) Expired(now time.Time) bool {
	return !l.Free() && !now.Before(l.ExpiresAt)
}

// Claimable reports whether a new owner may claim at now.
func (l Lease) Claimable(now time.Time) bool { return l.Free() || l.Expired(now) }

// Claim takes the lease for owner until now+ttl with the next fencing token.
// It returns ErrHeld while a live lease exists, whoever holds it: a holder
// that wants more time calls Renew.
func (l Lease) Claim(owner string, now time.Time, ttl time.Duration) (Lease, error) {
	if err := validate(owner, ttl); err != nil {
		return l, err
	}
	if !l.Claimable(now) {
		return l, fmt.Errorf("claim by %q: %w (owner %q until %s)", owner, ErrHeld, l.Owner, l.ExpiresAt.Format(time.RFC3339Nano))
	}
	return Lease{Owner: owner, Token: l.Token + 1, ExpiresAt: now.Add(ttl)}, nil
}

// Check verifies that owner with token holds a live lease at now. It returns
// ErrLost when another claim superseded it (or it was released) and
// ErrExpired when it still matches but ran out. Completing, failing and
// renewing all require Check to pass.
func (l Lease) Check(owner string, token int64, now time.Time) error {
	if !l.heldBy(owner, token) {
		return ErrLost
	}
	if l.Expired(now) {
		return ErrExpired
	}
	return nil
}

// Renew extends a live lease held by owner/token to now+ttl, keeping the token.
func (l Lease) Renew(owner string, token int64, now time.Time, ttl time.Duration) (Lease, error) {
	if err := validate(owner, ttl); err != nil {
		return l, err
	}
	if err := l.Check(owner, token, now); err != nil {
		return l, fmt.Errorf("renew by %q: %w", owner, err)
	}
	l.ExpiresAt = now.Add(ttl)
	return l, nil
}

// Release frees a lease held by owner/token. The token is kept so the next
// claim still gets a larger one. Releasing after expiry is allowed as long as
// nobody took over, so a shutting-down holder can hand rows back promptly.
func (l Lease) Release(owner string, token int64) (Lease, error) {
	if !l.heldBy(owner, token) {
		return l, fmt.Errorf("release by %q: %w", owner, ErrLost)
	}
	return Lease{Token: l.Token}, nil
}

// heldBy reports whether owner with token holds the lease, live or expired.
func (l Lease) heldBy(owner string, token int64) bool {
	return !l.Free() && l.Owner == owner && l.Token == token
}

func validate(owner string, ttl time.Duration) error {
	switch {
	case owner == "":
		return fmt.Errorf("%w: owner is empty", ErrInvalid)
	case ttl <= 0 || ttl > MaxTTL:
		return fmt.Errorf("%w: ttl %s outside (0, %s]", ErrInvalid, ttl, MaxTTL)
	}
	return nil
}
