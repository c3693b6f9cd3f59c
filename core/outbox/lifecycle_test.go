package outbox_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/lease"
	"github.com/july/template/core/outbox"
)

func TestClaim(t *testing.T) {
	t.Parallel()

	t.Run("Due", func(t *testing.T) {
		t.Parallel()

		ev, err := outbox.Claim(newEvent(t), "a", t0, time.Minute)
		require.NoError(t, err)
		require.Equal(t, outbox.Delivering, ev.Status)
		require.Equal(t, lease.Lease{Owner: "a", Token: 1, ExpiresAt: t0.Add(time.Minute)}, ev.Lease)
	})

	tests := []struct {
		name  string
		edit  func(*outbox.Event)
		owner string
		ttl   time.Duration
		want  error
	}{
		{"NotDue", func(ev *outbox.Event) { ev.NextAttemptAt = t0.Add(time.Nanosecond) }, "a", time.Minute, outbox.ErrNotDue},
		{"EmptyOwner", nil, "", time.Minute, lease.ErrInvalid},
		{"ZeroTTL", nil, "a", 0, lease.ErrInvalid},
		{"TTLTooLong", nil, "a", lease.MaxTTL + 1, lease.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			ev := newEvent(t)
			if tt.edit != nil {
				tt.edit(&ev)
			}
			got, err := outbox.Claim(ev, tt.owner, t0, tt.ttl)
			require.ErrorIs(t, err, tt.want, "owner %q ttl %s", tt.owner, tt.ttl)
			require.Equal(t, ev, got)
		})
	}

	for _, s := range []outbox.Status{outbox.Delivering, outbox.Delivered, outbox.Failed} {
		t.Run("Refuses"+s.String(), func(t *testing.T) {
			t.Parallel()

			ev := newEvent(t)
			ev.Status = s
			_, err := outbox.Claim(ev, "a", t0, time.Minute)
			var te *outbox.TransitionError
			require.ErrorAs(t, err, &te, "status %s", s)
		})
	}
}

func TestComplete(t *testing.T) {
	t.Parallel()

	ev := delivering(t)
	at := t0.Add(time.Second)
	got, err := outbox.Complete(ev, "a", 1, at)
	require.NoError(t, err)
	require.Equal(t, outbox.Delivered, got.Status)
	require.Equal(t, &at, got.DeliveredAt)
	require.Equal(t, lease.Lease{Token: 1}, got.Lease)
	require.Equal(t, ev.Payload, got.Payload)

	_, err = outbox.Complete(got, "a", 1, at)
	var te *outbox.TransitionError
	require.ErrorAs(t, err, &te, "delivered is terminal")

	_, err = outbox.Complete(ev, "a", 1, ev.Lease.ExpiresAt)
	require.ErrorIs(t, err, lease.ErrExpired)
}

func TestRenew(t *testing.T) {
	t.Parallel()

	ev := delivering(t)
	at := t0.Add(50 * time.Second)
	got, err := outbox.Renew(ev, "a", 1, at, time.Minute)
	require.NoError(t, err)
	require.Equal(t, lease.Lease{Owner: "a", Token: 1, ExpiresAt: at.Add(time.Minute)}, got.Lease)

	_, err = outbox.Renew(ev, "a", 1, at, 0)
	require.ErrorIs(t, err, lease.ErrInvalid)
	_, err = outbox.Renew(ev, "b", 1, at, time.Minute)
	require.ErrorIs(t, err, lease.ErrLost)
}

func TestFail(t *testing.T) {
	t.Parallel()

	p := outbox.Policy{MaxAttempts: 2}
	at := t0.Add(time.Second)

	t.Run("RetryThenFinal", func(t *testing.T) {
		t.Parallel()

		ev := delivering(t)
		d := p.OnFailure(ev.RetryCount, outbox.Transient("QUEUE_UNAVAILABLE", "down"), at, 0)
		ev, err := outbox.Fail(ev, "a", 1, d, at)
		require.NoError(t, err)
		require.Equal(t, outbox.Pending, ev.Status)
		require.Equal(t, 1, ev.RetryCount)
		require.Equal(t, at.Add(500*time.Millisecond), ev.NextAttemptAt)
		require.Equal(t, "QUEUE_UNAVAILABLE", ev.LastErrorCode)
		require.Equal(t, "down", ev.LastErrorMessage)
		require.Equal(t, lease.Lease{Token: 1}, ev.Lease)

		ev, err = outbox.Claim(ev, "b", ev.NextAttemptAt, time.Minute)
		require.NoError(t, err)
		d = p.OnFailure(ev.RetryCount, outbox.Transient("QUEUE_UNAVAILABLE", "down"), at, 0)
		ev, err = outbox.Fail(ev, "b", 2, d, at)
		require.NoError(t, err)
		require.Equal(t, outbox.Failed, ev.Status)
		require.Equal(t, 2, ev.RetryCount)
		require.Equal(t, testEventID, ev.EventID)
	})

	t.Run("StaleHolder", func(t *testing.T) {
		t.Parallel()

		ev := delivering(t)
		d := p.OnFailure(0, outbox.Transient("X", "x"), at, 0)
		got, err := outbox.Fail(ev, "a", 0, d, at)
		require.ErrorIs(t, err, lease.ErrLost)
		require.Equal(t, ev, got)
	})

	t.Run("DecisionDelivered", func(t *testing.T) {
		t.Parallel()

		_, err := outbox.Fail(delivering(t), "a", 1, outbox.FailureDecision{Status: outbox.Delivered}, at)
		var te *outbox.TransitionError
		require.ErrorAs(t, err, &te)
	})
}
