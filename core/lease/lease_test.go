package lease_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/lease"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func held(t *testing.T) lease.Lease {
	t.Helper()

	l, err := lease.Lease{}.Claim("a", t0, time.Minute)
	require.NoError(t, err)
	return l
}

func TestZeroValue(t *testing.T) {
	t.Parallel()

	var l lease.Lease
	require.True(t, l.Free())
	require.False(t, l.Expired(t0), "a free lease is not expired")
	require.True(t, l.Claimable(t0))
	require.ErrorIs(t, l.Check("a", 0, t0), lease.ErrLost)
}

func TestExpiry(t *testing.T) {
	t.Parallel()

	l := held(t)
	exp := t0.Add(time.Minute)
	tests := []struct {
		name    string
		now     time.Time
		expired bool
	}{
		{"AtClaim", t0, false},
		{"JustBefore", exp.Add(-time.Nanosecond), false},
		{"ExactInstant", exp, true},
		{"After", exp.Add(time.Nanosecond), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			require.Equal(t, tt.expired, l.Expired(tt.now), "now %s expires %s", tt.now, exp)
			require.Equal(t, tt.expired, l.Claimable(tt.now), "now %s", tt.now)
			err := l.Check("a", 1, tt.now)
			if tt.expired {
				require.ErrorIs(t, err, lease.ErrExpired, "now %s", tt.now)
			} else {
				require.NoError(t, err, "now %s", tt.now)
			}
		})
	}
}

func TestClaim(t *testing.T) {
	t.Parallel()

	t.Run("Free", func(t *testing.T) {
		t.Parallel()

		l := held(t)
		require.Equal(t, lease.Lease{Owner: "a", Token: 1, ExpiresAt: t0.Add(time.Minute)}, l)
		require.False(t, l.Free())
	})

	t.Run("HeldRefusedEvenForHolder", func(t *testing.T) {
		t.Parallel()

		l := held(t)
		for _, owner := range []string{"a", "b"} {
			got, err := l.Claim(owner, t0.Add(59*time.Second), time.Minute)
			require.ErrorIs(t, err, lease.ErrHeld, "owner %q", owner)
			require.Equal(t, l, got, "a refused claim changes nothing")
		}
	})

	t.Run("TakeoverAtExactExpiry", func(t *testing.T) {
		t.Parallel()

		l, err := held(t).Claim("b", t0.Add(time.Minute), time.Minute)
		require.NoError(t, err)
		require.Equal(t, lease.Lease{Owner: "b", Token: 2, ExpiresAt: t0.Add(2 * time.Minute)}, l)
	})

	t.Run("TokenGrowsWithEveryClaim", func(t *testing.T) {
		t.Parallel()

		var l lease.Lease
		now := t0
		for want := int64(1); want <= 5; want++ {
			var err error
			l, err = l.Claim("a", now, time.Second)
			require.NoError(t, err, "claim %d", want)
			require.Equal(t, want, l.Token)
			if want%2 == 0 { // alternate release and expiry
				l, err = l.Release("a", want)
				require.NoError(t, err)
			}
			now = now.Add(time.Second)
		}
	})

	invalid := []struct {
		name  string
		owner string
		ttl   time.Duration
	}{
		{"EmptyOwner", "", time.Minute},
		{"ZeroTTL", "a", 0},
		{"NegativeTTL", "a", -time.Second},
		{"TTLOverMax", "a", lease.MaxTTL + time.Nanosecond},
	}
	for _, tt := range invalid {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := lease.Lease{}.Claim(tt.owner, t0, tt.ttl)
			require.ErrorIs(t, err, lease.ErrInvalid, "owner %q ttl %s", tt.owner, tt.ttl)
			require.Equal(t, lease.Lease{}, got)
		})
	}

	t.Run("TTLAtMax", func(t *testing.T) {
		t.Parallel()

		l, err := lease.Lease{}.Claim("a", t0, lease.MaxTTL)
		require.NoError(t, err)
		require.Equal(t, t0.Add(lease.MaxTTL), l.ExpiresAt)
	})
}

func TestCheck(t *testing.T) {
	t.Parallel()

	l := held(t)
	tests := []struct {
		name  string
		owner string
		token int64
		now   time.Time
		want  error
	}{
		{"Holder", "a", 1, t0, nil},
		{"OtherOwner", "b", 1, t0, lease.ErrLost},
		{"WrongToken", "a", 2, t0, lease.ErrLost},
		{"StaleToken", "a", 0, t0, lease.ErrLost},
		{"Expired", "a", 1, t0.Add(time.Minute), lease.ErrExpired},
		{"LostWinsOverExpired", "b", 1, t0.Add(time.Hour), lease.ErrLost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			err := l.Check(tt.owner, tt.token, tt.now)
			if tt.want == nil {
				require.NoError(t, err, "owner %q token %d", tt.owner, tt.token)
				return
			}
			require.ErrorIs(t, err, tt.want, "owner %q token %d now %s", tt.owner, tt.token, tt.now)
		})
	}
}

func TestStaleHolderAfterTakeover(t *testing.T) {
	t.Parallel()

	first := held(t)
	after := t0.Add(time.Minute) // a's lease expired
	taken, err := first.Claim("b", after, time.Minute)
	require.NoError(t, err)

	// a still believes it holds token 1; every operation now fails with ErrLost.
	require.ErrorIs(t, taken.Check("a", 1, after), lease.ErrLost)
	_, err = taken.Renew("a", 1, after, time.Minute)
	require.ErrorIs(t, err, lease.ErrLost)
	_, err = taken.Release("a", 1)
	require.ErrorIs(t, err, lease.ErrLost)

	// Even the same owner name with the old token is stale after re-claiming.
	again, err := taken.Release("b", 2)
	require.NoError(t, err)
	again, err = again.Claim("a", after, time.Minute)
	require.NoError(t, err)
	require.ErrorIs(t, again.Check("a", 1, after), lease.ErrLost)
	require.NoError(t, again.Check("a", 3, after))
}

func TestRenew(t *testing.T) {
	t.Parallel()

	t.Run("ExtendsKeepingToken", func(t *testing.T) {
		t.Parallel()

		now := t0.Add(50 * time.Second)
		l, err := held(t).Renew("a", 1, now, 2*time.Minute)
		require.NoError(t, err)
		require.Equal(t, lease.Lease{Owner: "a", Token: 1, ExpiresAt: now.Add(2 * time.Minute)}, l)
	})

	tests := []struct {
		name  string
		owner string
		token int64
		now   time.Time
		ttl   time.Duration
		want  error
	}{
		{"AtExpiry", "a", 1, t0.Add(time.Minute), time.Minute, lease.ErrExpired},
		{"OtherOwner", "b", 1, t0, time.Minute, lease.ErrLost},
		{"WrongToken", "a", 9, t0, time.Minute, lease.ErrLost},
		{"EmptyOwner", "", 1, t0, time.Minute, lease.ErrInvalid},
		{"BadTTL", "a", 1, t0, 0, lease.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			l := held(t)
			got, err := l.Renew(tt.owner, tt.token, tt.now, tt.ttl)
			require.ErrorIs(t, err, tt.want, "owner %q token %d now %s ttl %s", tt.owner, tt.token, tt.now, tt.ttl)
			require.Equal(t, l, got, "a refused renew changes nothing")
		})
	}

	t.Run("FreeLease", func(t *testing.T) {
		t.Parallel()

		_, err := lease.Lease{Token: 4}.Renew("a", 4, t0, time.Minute)
		require.ErrorIs(t, err, lease.ErrLost)
	})
}

func TestRelease(t *testing.T) {
	t.Parallel()

	t.Run("KeepsToken", func(t *testing.T) {
		t.Parallel()

		l, err := held(t).Release("a", 1)
		require.NoError(t, err)
		require.Equal(t, lease.Lease{Token: 1}, l)
		require.True(t, l.Free())
		require.True(t, l.Claimable(t0))

		next, err := l.Claim("b", t0, time.Minute)
		require.NoError(t, err)
		require.Equal(t, int64(2), next.Token)
	})

	t.Run("AfterExpiryAllowed", func(t *testing.T) {
		t.Parallel()

		// A shutting-down holder may hand back an expired lease as long as
		// nobody took it over.
		l := held(t)
		require.ErrorIs(t, l.Check("a", 1, t0.Add(2*time.Minute)), lease.ErrExpired)
		l, err := l.Release("a", 1)
		require.NoError(t, err)
		require.True(t, l.Free())
	})

	tests := []struct {
		name  string
		l     lease.Lease
		owner string
		token int64
	}{
		{"OtherOwner", lease.Lease{Owner: "a", Token: 1, ExpiresAt: t0}, "b", 1},
		{"WrongToken", lease.Lease{Owner: "a", Token: 2, ExpiresAt: t0}, "a", 1},
		{"AlreadyFree", lease.Lease{Token: 1}, "a", 1},
		{"NeverClaimed", lease.Lease{}, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := tt.l.Release(tt.owner, tt.token)
			require.ErrorIs(t, err, lease.ErrLost, "lease %+v owner %q token %d", tt.l, tt.owner, tt.token)
			require.Equal(t, tt.l, got)
		})
	}
}
