package outbox_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/outbox"
)

func TestStatusString(t *testing.T) {
	t.Parallel()

	for s, want := range map[outbox.Status]string{
		outbox.Pending: "pending", outbox.Delivering: "delivering",
		outbox.Delivered: "delivered", outbox.Failed: "failed", 0: "status(0)", 9: "status(9)",
	} {
		require.Equal(t, want, s.String(), "status %d", int16(s))
		require.Equal(t, want[:6] != "status", s.Valid(), "valid %d", int16(s))
	}
	// The integers are the stored contract.
	require.Equal(t, []int16{1, 2, 3, 4}, []int16{int16(outbox.Pending), int16(outbox.Delivering), int16(outbox.Delivered), int16(outbox.Failed)})
}

func TestTransition(t *testing.T) {
	t.Parallel()

	legal := map[[2]outbox.Status]bool{
		{outbox.Pending, outbox.Delivering}:   true,
		{outbox.Delivering, outbox.Delivered}: true,
		{outbox.Delivering, outbox.Pending}:   true,
		{outbox.Delivering, outbox.Failed}:    true,
		{outbox.Failed, outbox.Pending}:       true,
	}
	all := []outbox.Status{0, outbox.Pending, outbox.Delivering, outbox.Delivered, outbox.Failed, 5}
	for _, from := range all {
		for _, to := range all {
			err := outbox.Transition(from, to)
			if legal[[2]outbox.Status{from, to}] {
				require.NoError(t, err, "%s -> %s", from, to)
				continue
			}
			var te *outbox.TransitionError
			require.ErrorAs(t, err, &te, "%s -> %s", from, to)
			require.Equal(t, outbox.TransitionError{From: from, To: to}, *te)
			require.Contains(t, err.Error(), from.String()+" -> "+to.String())
		}
	}
}
