package outbox_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/outbox"
)

// delivered returns an event claimed by "a" and delivered at t0+1s.
func delivered(t *testing.T) outbox.Event {
	t.Helper()

	ev, err := outbox.Complete(delivering(t), "a", 1, t0.Add(time.Second))
	require.NoError(t, err)
	return ev
}

func TestNewConsumerFailureRecord(t *testing.T) {
	t.Parallel()

	at := t0.Add(time.Hour)
	tests := []struct {
		name, code, msg      string
		wantCode, wantPrefix string
	}{
		{"OwnCode", "ORDER_UNKNOWN", "order 42 does not exist", "ORDER_UNKNOWN", "order 42 does not exist"},
		{"EmptyCode", "", "boom", outbox.ConsumerFailedCode, "boom"},
		{"LowercaseCode", "order_unknown", "boom", outbox.ConsumerFailedCode, "boom"},
		{"CodeTooLong", strings.Repeat("A", 65), "boom", outbox.ConsumerFailedCode, "boom"},
		{"ControlBytes", "X", "line1\nline2", "X", "line1 line2"},
		{"LongMessage", "X", strings.Repeat("é", outbox.MaxErrorMessageBytes), "X", "éé"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			ev := delivered(t)
			got, err := outbox.NewConsumerFailureRecord(ev, tt.code, tt.msg, at)
			require.NoError(t, err, "code %q", tt.code)
			require.Equal(t, ev.EventID, got.EventID)
			require.Equal(t, ev.EventType, got.EventType)
			require.Equal(t, tt.wantCode, got.Code, "code %q", tt.code)
			require.True(t, strings.HasPrefix(got.Message, tt.wantPrefix), "message %q", got.Message)
			require.LessOrEqual(t, len(got.Message), outbox.MaxErrorMessageBytes)
			require.Equal(t, at, got.FailedAt)
			require.True(t, got.Open(), "a new failure waits for a replay")
		})
	}
}

// Regression: a consumer's final failure is recorded whatever the
// row's status (the relay's Complete may come late, or be lost and the row
// recovered to pending or failed); only an event without an id is refused.
func TestNewConsumerFailureWhateverTheStatus(t *testing.T) {
	t.Parallel()

	for _, s := range []outbox.Status{outbox.Pending, outbox.Delivering, outbox.Delivered, outbox.Failed} {
		t.Run(s.String(), func(t *testing.T) {
			t.Parallel()

			ev := delivered(t)
			ev.Status = s
			got, err := outbox.NewConsumerFailureRecord(ev, "X", "boom", t0)
			require.NoError(t, err, "status %s", s)
			require.Equal(t, ev.EventID, got.EventID)
			require.True(t, got.Open())
		})
	}
	_, err := outbox.NewConsumerFailureRecord(outbox.Event{}, "X", "boom", t0)
	require.Error(t, err, "an event without an id has no failure")
}

// The relay can never take the consumer's edge: Transition and Fail refuse
// Delivered -> Failed.
func TestRelayCannotFailDelivered(t *testing.T) {
	t.Parallel()

	require.Error(t, outbox.Transition(outbox.Delivered, outbox.Failed))
	ev := delivered(t)
	_, err := outbox.Fail(ev, "a", 1, outbox.FailureDecision{Status: outbox.Failed}, t0.Add(2*time.Second))
	var te *outbox.TransitionError
	require.ErrorAs(t, err, &te)
	require.ErrorAs(t, outbox.CanFail(ev, "a", 1, t0.Add(2*time.Second)), &te)
}
