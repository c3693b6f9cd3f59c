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

	t.Run("ExpiredGoesBackToPending", func(t *testing.T) {
		t.Parallel()

		ev := delivering(t)
		ev.RetryCount = 2
		at := ev.Lease.ExpiresAt // the exact instant of expiry
		got, err := outbox.Recover(ev, at)
		require.NoError(t, err)

		want := ev
		want.Status = outbox.Pending
		want.NextAttemptAt = at
		want.UpdatedAt = at
		want.Lease = lease.Lease{Token: 1}
		require.Equal(t, want, got)

		// The next claim gets a larger token and the same event id.
		again, err := outbox.Claim(got, "b", at, time.Minute)
		require.NoError(t, err)
		require.Equal(t, int64(2), again.Lease.Token)
		require.Equal(t, testEventID, again.EventID)

		// The crashed holder can no longer complete.
		require.ErrorIs(t, outbox.CanComplete(again, "a", 1, at), lease.ErrLost)
	})

	t.Run("LiveLeaseRefused", func(t *testing.T) {
		t.Parallel()

		ev := delivering(t)
		got, err := outbox.Recover(ev, ev.Lease.ExpiresAt.Add(-time.Nanosecond))
		require.ErrorIs(t, err, lease.ErrHeld)
		require.Equal(t, ev, got)
	})

	for _, s := range []outbox.Status{outbox.Pending, outbox.Delivered, outbox.Failed} {
		t.Run("Refuses"+s.String(), func(t *testing.T) {
			t.Parallel()

			ev := newEvent(t)
			ev.Status = s
			_, err := outbox.Recover(ev, t0.Add(time.Hour))
			var te *outbox.TransitionError
			require.ErrorAs(t, err, &te, "status %s", s)
			require.Equal(t, outbox.TransitionError{From: s, To: outbox.Pending}, *te)
		})
	}
}
