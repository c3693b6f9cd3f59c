package outbox_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/lease"
	"github.com/july/template/core/outbox"
)

func TestCanCompleteFailRenew(t *testing.T) {
	t.Parallel()

	checks := map[string]func(outbox.Event, string, int64, time.Time) error{
		"CanComplete": outbox.CanComplete,
		"CanFail":     outbox.CanFail,
		"CanRenew":    outbox.CanRenew,
	}
	exp := t0.Add(time.Minute)
	tests := []struct {
		name    string
		edit    func(*outbox.Event)
		owner   string
		token   int64
		now     time.Time
		wantErr error // nil, lease.ErrLost, lease.ErrExpired; transition set separately
		wantTE  bool
	}{
		{"Holder", nil, "a", 1, t0, nil, false},
		{"HolderJustBeforeExpiry", nil, "a", 1, exp.Add(-time.Nanosecond), nil, false},
		{"HolderAtExpiry", nil, "a", 1, exp, lease.ErrExpired, false},
		{"HolderAfterExpiry", nil, "a", 1, exp.Add(time.Hour), lease.ErrExpired, false},
		{"OtherOwner", nil, "b", 1, t0, lease.ErrLost, false},
		{"StaleToken", nil, "a", 0, t0, lease.ErrLost, false},
		{"Released", func(ev *outbox.Event) { ev.Lease = lease.Lease{Token: 1} }, "a", 1, t0, lease.ErrLost, false},
		{"NotDelivering", func(ev *outbox.Event) { ev.Status = outbox.Pending }, "a", 1, t0, nil, true},
		{"Delivered", func(ev *outbox.Event) { ev.Status = outbox.Delivered }, "a", 1, t0, nil, true},
	}
	for name, check := range checks {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()

				ev := delivering(t)
				if tt.edit != nil {
					tt.edit(&ev)
				}
				err := check(ev, tt.owner, tt.token, tt.now)
				switch {
				case tt.wantTE:
					var te *outbox.TransitionError
					require.ErrorAs(t, err, &te, "status %s", ev.Status)
					require.Equal(t, ev.Status, te.From)
				case tt.wantErr != nil:
					require.ErrorIs(t, err, tt.wantErr, "owner %q token %d now %s", tt.owner, tt.token, tt.now)
				default:
					require.NoError(t, err, "owner %q token %d now %s", tt.owner, tt.token, tt.now)
				}
			})
		}
	}
}

func TestLeaseExpired(t *testing.T) {
	t.Parallel()

	ev := delivering(t)
	exp := ev.Lease.ExpiresAt
	require.False(t, outbox.LeaseExpired(ev, exp.Add(-time.Nanosecond)))
	require.True(t, outbox.LeaseExpired(ev, exp), "now == ExpiresAt is expired")
	require.True(t, outbox.LeaseExpired(ev, exp.Add(time.Second)))

	ev.Lease = lease.Lease{Token: 1} // inconsistent row: delivering without owner
	require.True(t, outbox.LeaseExpired(ev, t0))

	pending := newEvent(t)
	require.False(t, outbox.LeaseExpired(pending, t0.Add(time.Hour)), "pending rows have no lease to expire")
}

func TestRecover(t *testing.T) {
	t.Parallel()

	p := outbox.Policy{MaxAttempts: 3, Backoff: outbox.Backoff{Base: time.Second, Max: time.Minute}}

	t.Run("ExpiredCountsAnAttemptAndGoesBackToPending", func(t *testing.T) {
		t.Parallel()

		ev := delivering(t)
		ev.RetryCount = 1
		ev.LastErrorCode, ev.LastErrorMessage = "QUEUE_UNAVAILABLE", "redis down"
		at := ev.Lease.ExpiresAt // the exact instant of expiry
		got, err := outbox.Recover(ev, p, at, 0)
		require.NoError(t, err)

		want := ev
		want.Status = outbox.Pending
		want.RetryCount = 2                                // the dead holder's attempt counts
		want.NextAttemptAt = at.Add(p.Backoff.Delay(2, 0)) // backoff as after any failed attempt
		want.LastErrorCode, want.LastErrorMessage = outbox.CodeLeaseExpired, outbox.LeaseExpiredMessage
		want.UpdatedAt = at
		want.Lease = lease.Lease{Token: 1}
		require.Equal(t, want, got)
		require.Equal(t, p.OnLeaseExpired(1, at, 0).NextAttemptAt, got.NextAttemptAt, "Recover applies OnLeaseExpired")

		// Not claimable before the backoff, then with a larger token and
		// the same event id.
		_, err = outbox.Claim(got, "b", at, time.Minute)
		require.ErrorIs(t, err, outbox.ErrNotDue)
		again, err := outbox.Claim(got, "b", got.NextAttemptAt, time.Minute)
		require.NoError(t, err)
		require.Equal(t, int64(2), again.Lease.Token)
		require.Equal(t, testEventID, again.EventID)

		// The crashed holder can no longer complete.
		require.ErrorIs(t, outbox.CanComplete(again, "a", 1, again.UpdatedAt), lease.ErrLost)
	})

	t.Run("LastAttemptEndsFailed", func(t *testing.T) {
		t.Parallel()

		ev := delivering(t)
		ev.RetryCount = 2 // attempt 3 of 3 was the one whose holder died
		at := ev.Lease.ExpiresAt.Add(time.Hour)
		got, err := outbox.Recover(ev, p, at, 0.7)
		require.NoError(t, err)

		want := ev
		want.Status = outbox.Failed
		want.RetryCount = 3
		want.NextAttemptAt = at
		want.LastErrorCode, want.LastErrorMessage = outbox.CodeLeaseExpired, outbox.LeaseExpiredMessage
		want.UpdatedAt = at
		want.Lease = lease.Lease{Token: 1}
		require.Equal(t, want, got)

		_, err = outbox.Claim(got, "b", at, time.Minute)
		var te *outbox.TransitionError
		require.ErrorAs(t, err, &te, "a failed event is never claimed again")
		_, err = outbox.Recover(got, p, at, 0)
		require.ErrorAs(t, err, &te, "nor recovered again")
	})

	t.Run("ZeroPolicyUsesDefaultMaxAttempts", func(t *testing.T) {
		t.Parallel()

		ev := delivering(t)
		ev.RetryCount = outbox.DefaultMaxAttempts - 2
		got, err := outbox.Recover(ev, outbox.Policy{}, ev.Lease.ExpiresAt, 0.5)
		require.NoError(t, err)
		require.Equal(t, outbox.Pending, got.Status, "attempt %d of %d", outbox.DefaultMaxAttempts-1, outbox.DefaultMaxAttempts)
		ev.RetryCount++
		got, err = outbox.Recover(ev, outbox.Policy{}, ev.Lease.ExpiresAt, 0.5)
		require.NoError(t, err)
		require.Equal(t, outbox.Failed, got.Status, "attempt %d of %d", outbox.DefaultMaxAttempts, outbox.DefaultMaxAttempts)
	})

	t.Run("LiveLeaseRefused", func(t *testing.T) {
		t.Parallel()

		ev := delivering(t)
		got, err := outbox.Recover(ev, p, ev.Lease.ExpiresAt.Add(-time.Nanosecond), 0)
		require.ErrorIs(t, err, lease.ErrHeld)
		require.Equal(t, ev, got)
	})

	for _, s := range []outbox.Status{outbox.Pending, outbox.Delivered, outbox.Failed} {
		t.Run("Refuses"+s.String(), func(t *testing.T) {
			t.Parallel()

			ev := newEvent(t)
			ev.Status = s
			_, err := outbox.Recover(ev, p, t0.Add(time.Hour), 0)
			var te *outbox.TransitionError
			require.ErrorAs(t, err, &te, "status %s", s)
			require.Equal(t, outbox.TransitionError{From: s, To: outbox.Pending}, *te)
		})
	}
}
