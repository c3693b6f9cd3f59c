package outbox_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/lease"
	"github.com/july/template/core/outbox"
)

var validReq = outbox.ReplayRequest{Operator: "ops-1", Reason: "队列恢复后重放", BatchID: "b-20300102"}

func TestReplayRequestValidate(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		edit  func(*outbox.ReplayRequest)
		field string
	}{
		{"Valid", func(*outbox.ReplayRequest) {}, ""},
		{"OperatorEmpty", func(r *outbox.ReplayRequest) { r.Operator = "" }, "operator"},
		{"OperatorBlank", func(r *outbox.ReplayRequest) { r.Operator = " \t" }, "operator"},
		{"OperatorTooLong", func(r *outbox.ReplayRequest) { r.Operator = strings.Repeat("o", outbox.MaxOperatorLen+1) }, "operator"},
		{"ReasonEmpty", func(r *outbox.ReplayRequest) { r.Reason = "" }, "reason"},
		{"ReasonAtLimit", func(r *outbox.ReplayRequest) { r.Reason = strings.Repeat("r", outbox.MaxReasonLen) }, ""},
		{"ReasonTooLong", func(r *outbox.ReplayRequest) { r.Reason = strings.Repeat("r", outbox.MaxReasonLen+1) }, "reason"},
		{"BatchEmpty", func(r *outbox.ReplayRequest) { r.BatchID = "" }, "batch_id"},
		{"BatchTooLong", func(r *outbox.ReplayRequest) { r.BatchID = strings.Repeat("b", outbox.MaxOperatorLen+1) }, "batch_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			r := validReq
			tt.edit(&r)
			err := r.Validate()
			if tt.field == "" {
				require.NoError(t, err, "request %+v", r)
				return
			}
			var ve *outbox.ValidationError
			require.ErrorAs(t, err, &ve, "request %+v", r)
			require.Equal(t, tt.field, ve.Field)
		})
	}
}

func TestCanReplay(t *testing.T) {
	t.Parallel()

	const stuckAfter = 10 * time.Minute
	tests := []struct {
		name       string
		edit       func(*outbox.Event)
		now        time.Time
		stuckAfter time.Duration
		ok         bool
	}{
		{"Failed", func(ev *outbox.Event) { ev.Status = outbox.Failed }, t0, stuckAfter, true},
		{"Delivered", func(ev *outbox.Event) { ev.Status = outbox.Delivered }, t0.Add(time.Hour), stuckAfter, false},
		{"DeliveringLive", claimA, t0.Add(time.Minute - time.Nanosecond), stuckAfter, false},
		{"DeliveringExpiredAtInstant", claimA, t0.Add(time.Minute), stuckAfter, true},
		{"PendingFresh", nil, t0.Add(stuckAfter - time.Nanosecond), stuckAfter, false},
		{"PendingStuckAtInstant", nil, t0.Add(stuckAfter), stuckAfter, true},
		{"PendingZeroStuckAfter", nil, t0.Add(time.Hour), 0, false},
		{"PendingFutureRetry", func(ev *outbox.Event) { ev.NextAttemptAt = t0.Add(time.Hour) }, t0.Add(stuckAfter), stuckAfter, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			ev := newEvent(t)
			if tt.edit != nil {
				tt.edit(&ev)
			}
			err := outbox.CanReplay(ev, tt.now, tt.stuckAfter)
			if tt.ok {
				require.NoError(t, err, "status %s now %s", ev.Status, tt.now)
				return
			}
			require.ErrorIs(t, err, outbox.ErrNotReplayable, "status %s now %s", ev.Status, tt.now)
		})
	}
}

func claimA(ev *outbox.Event) {
	ev.Status = outbox.Delivering
	ev.Lease = lease.Lease{Owner: "a", Token: 1, ExpiresAt: t0.Add(time.Minute)}
}

func TestReplay(t *testing.T) {
	t.Parallel()

	at := t0.Add(time.Hour)

	t.Run("FailedBecomesPending", func(t *testing.T) {
		t.Parallel()

		ev := newEvent(t)
		ev.Status, ev.RetryCount = outbox.Failed, 10
		ev.LastErrorCode, ev.LastErrorMessage = "QUEUE_UNAVAILABLE", "down"
		ev.Lease = lease.Lease{Token: 3}
		got, err := outbox.Replay(ev, validReq, at, time.Minute)
		require.NoError(t, err)

		want := ev
		want.Status, want.RetryCount, want.NextAttemptAt, want.UpdatedAt = outbox.Pending, 0, at, at
		require.Equal(t, want, got, "same event id, payload, ids; error kept as history")
	})

	t.Run("StuckDeliveringReleasesLease", func(t *testing.T) {
		t.Parallel()

		ev := delivering(t)
		got, err := outbox.Replay(ev, validReq, at, time.Minute)
		require.NoError(t, err)
		require.Equal(t, outbox.Pending, got.Status)
		require.Equal(t, lease.Lease{Token: 1}, got.Lease)
		require.Equal(t, ev.EventID, got.EventID)
	})

	t.Run("DeliveredRefused", func(t *testing.T) {
		t.Parallel()

		ev := newEvent(t)
		ev.Status = outbox.Delivered
		got, err := outbox.Replay(ev, validReq, at, time.Minute)
		require.ErrorIs(t, err, outbox.ErrNotReplayable)
		require.Equal(t, ev, got)
	})

	t.Run("InvalidRequestRefused", func(t *testing.T) {
		t.Parallel()

		ev := newEvent(t)
		ev.Status = outbox.Failed
		_, err := outbox.Replay(ev, outbox.ReplayRequest{Operator: "ops-1"}, at, time.Minute)
		var ve *outbox.ValidationError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, "reason", ve.Field)
	})
}
