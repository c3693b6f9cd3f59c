package contracttests

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// DeliveredStore is an outbox store that also reads recent deliveries.
type DeliveredStore interface {
	ports.OutboxStore
	ports.OutboxDeliveredReader
}

// RunOutboxDeliveredReader checks ports.OutboxDeliveredReader: only
// Delivered events from the window, in (delivered_at, id) order, paged by
// the cursor without gaps or repeats.
func RunOutboxDeliveredReader(t *testing.T, newStore func(t *testing.T) DeliveredStore) {
	t.Helper()
	t.Run("DeliveredSince/WindowOrderAndPages", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		b := newOutboxBundle(t, func(*testing.T) ports.OutboxStore { return s })
		b.seed(t0, 7, "order.created")
		got := b.claim("relay-a", t0, 7)
		require.Len(t, got, 7)
		// Two delivered before the window, four inside it (two at the same
		// instant, so the id breaks the tie), one left Delivering.
		at := []time.Time{t0.Add(-time.Hour), t0.Add(-time.Minute), t0, t0, t0.Add(time.Second), t0.Add(2 * time.Second)}
		for i, when := range at {
			lost, err := s.Complete(t.Context(), "relay-a", when, []ports.LeaseRef{ref(got[i])})
			require.NoError(t, err)
			require.Empty(t, lost)
		}
		from := t0
		var seen []string
		var cur ports.DeliveredCursor
		for range 10 {
			page, err := s.DeliveredSince(t.Context(), from, cur, 3)
			require.NoError(t, err)
			for _, ev := range page {
				require.Equal(t, outbox.Delivered, ev.Status, "rule: only Delivered events")
				require.NotNil(t, ev.DeliveredAt)
				require.False(t, ev.DeliveredAt.Before(from), "rule: delivered_at >= from")
				seen = append(seen, ev.EventID)
				cur = ports.DeliveredCursor{DeliveredAt: *ev.DeliveredAt, ID: ev.ID}
			}
			if len(page) < 3 {
				break
			}
		}
		want := []string{got[2].EventID, got[3].EventID, got[4].EventID, got[5].EventID}
		if got[3].ID < got[2].ID {
			want[0], want[1] = want[1], want[0]
		}
		require.Equal(t, want, seen, "rule: the window's deliveries once each, by (delivered_at, id)")
	})
	t.Run("DeliveredSince/RefusesLimitOutOfRange", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)
		for _, limit := range []int{0, 501} {
			_, err := s.DeliveredSince(t.Context(), t0, ports.DeliveredCursor{}, limit)
			require.Error(t, err, "limit %d", limit)
		}
	})
}
