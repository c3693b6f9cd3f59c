package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/idempotency"
	"github.com/july/template/core/lease"
)

func TestDecide(t *testing.T) {
	t.Parallel()

	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	fpA := idempotency.Fingerprint{Version: idempotency.FingerprintV1, Sum: sumOf('a')}
	fpB := idempotency.Fingerprint{Version: idempotency.FingerprintV1, Sum: sumOf('b')}
	fpA2 := idempotency.Fingerprint{Version: 2, Sum: fpA.Sum}
	live := lease.Lease{Owner: "api-1", Token: 1, ExpiresAt: now.Add(time.Nanosecond)}
	expiringNow := lease.Lease{Owner: "api-1", Token: 1, ExpiresAt: now}
	expired := lease.Lease{Owner: "api-1", Token: 1, ExpiresAt: now.Add(-time.Second)}
	released := lease.Lease{Token: 1}

	rec := func(fp idempotency.Fingerprint, st idempotency.State, l lease.Lease) *idempotency.Record {
		return &idempotency.Record{
			Scope: idempotency.Scope{Principal: "u1", Operation: "topup.create"},
			Key:   "key-0001", Fingerprint: fp, State: st, Lease: l,
		}
	}
	tests := []struct {
		name     string
		existing *idempotency.Record
		incoming idempotency.Fingerprint
		want     idempotency.Decision
		wantErr  error
	}{
		{"NoRecord", nil, fpA, idempotency.DecisionNew, nil},
		{"CompletedSame", rec(fpA, idempotency.StateCompleted, lease.Lease{}), fpA, idempotency.DecisionReplay, nil},
		{"CompletedDifferent", rec(fpA, idempotency.StateCompleted, lease.Lease{}), fpB, idempotency.DecisionReused, idempotency.ErrKeyReused},
		{"InProgressDifferent", rec(fpA, idempotency.StateInProgress, live), fpB, idempotency.DecisionReused, idempotency.ErrKeyReused},
		{"ExpiredDifferent", rec(fpA, idempotency.StateInProgress, expired), fpB, idempotency.DecisionReused, idempotency.ErrKeyReused},
		{"InProgressLive", rec(fpA, idempotency.StateInProgress, live), fpA, idempotency.DecisionInProgress, idempotency.ErrInProgress},
		{"LeaseExpiresAtNow", rec(fpA, idempotency.StateInProgress, expiringNow), fpA, idempotency.DecisionTakeover, nil},
		{"LeaseExpired", rec(fpA, idempotency.StateInProgress, expired), fpA, idempotency.DecisionTakeover, nil},
		{"LeaseReleased", rec(fpA, idempotency.StateInProgress, released), fpA, idempotency.DecisionTakeover, nil},
		{"OtherVersion", rec(fpA, idempotency.StateCompleted, lease.Lease{}), fpA2, idempotency.DecisionReused, idempotency.ErrKeyReused},
		{"ZeroFingerprints", rec(idempotency.Fingerprint{}, idempotency.StateCompleted, lease.Lease{}), idempotency.Fingerprint{}, idempotency.DecisionReused, idempotency.ErrKeyReused},
		{"UnknownState", rec(fpA, idempotency.State(9), expired), fpA, idempotency.DecisionInProgress, idempotency.ErrInProgress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got := idempotency.Decide(tt.existing, tt.incoming, now)
			require.Equal(t, tt.want, got, "existing %+v incoming %s", tt.existing, tt.incoming)
			if tt.wantErr == nil {
				require.NoError(t, got.Err(), "decision %s", got)
				return
			}
			require.ErrorIs(t, got.Err(), tt.wantErr, "decision %s", got)
		})
	}
}

func TestDecisionString(t *testing.T) {
	t.Parallel()

	names := map[idempotency.Decision]string{
		idempotency.DecisionNew:        "new",
		idempotency.DecisionReplay:     "replay",
		idempotency.DecisionReused:     "reused",
		idempotency.DecisionInProgress: "in_progress",
		idempotency.DecisionTakeover:   "takeover",
		idempotency.Decision(0):        "unknown",
	}
	for d, want := range names {
		require.Equal(t, want, d.String(), "decision %d", int(d))
	}
}

func sumOf(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

// Regression: a record stored by another version is compared with the
// request recomputed by that version.
func TestInVersionRecomputesWithTheStoredVersion(t *testing.T) {
	t.Parallel()
	body := []byte(`{"amount_cents":100,"time":"x"}`)
	v1, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{Version: idempotency.FingerprintV1})
	require.NoError(t, err)
	v3, err := idempotency.NewFingerprinter(idempotency.FingerprinterConfig{})
	require.NoError(t, err)
	stored, err := v1.FromJSON(body)
	require.NoError(t, err)
	incoming, err := v3.FromJSON(body)
	require.NoError(t, err)
	rec := &idempotency.Record{Fingerprint: stored, State: idempotency.StateCompleted}
	refp := func(v idempotency.FingerprintVersion) (idempotency.Fingerprint, error) {
		require.Equal(t, idempotency.FingerprintV1, v)
		return v1.FromJSON(body)
	}

	require.Equal(t, idempotency.DecisionReused, idempotency.Decide(rec, incoming, time.Time{}), "versions never match by themselves")
	require.Equal(t, idempotency.DecisionReplay,
		idempotency.Decide(rec, idempotency.InVersion(stored.Version, incoming, refp), time.Time{}),
		"rule: recomputed with the record's version, a byte-identical retry replays")
	require.Equal(t, incoming, idempotency.InVersion(stored.Version, incoming, nil), "no recompute: incoming as it is")
	require.Equal(t, incoming, idempotency.InVersion(stored.Version, incoming,
		func(idempotency.FingerprintVersion) (idempotency.Fingerprint, error) {
			return idempotency.Fingerprint{}, idempotency.ErrUnsupportedVersion
		}),
		"a version the request cannot be computed by: incoming as it is")
}
