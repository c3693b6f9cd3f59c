package relay_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
	"github.com/july/template/core/relay"
)

// flaky fails every envelope on its first call, then delegates.
type flaky struct {
	ports.Publisher
	calls int
}

func (f *flaky) Publish(ctx context.Context, envs []outbox.Envelope) []error {
	f.calls++
	if f.calls == 1 {
		errs := make([]error, len(envs))
		for i := range errs {
			errs[i] = ports.ErrUnavailable
		}
		return errs
	}
	return f.Publisher.Publish(ctx, envs)
}

// Redeliver publishes the window's deliveries again, and only those,
// across pages and through a failed first publish; row states stay.
func TestRedeliverPublishesTheWindowAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := memory.NewOutboxStore()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 1200 // more than two pages
	evs := make([]outbox.Event, n)
	for i := range evs {
		ev, err := outbox.New(outbox.NewParams{EventID: uuid.NewString(), EventType: "order.created", PayloadVersion: 1,
			AggregateType: "order", AggregateID: "o", ResourceType: "order", ResourceID: "o",
			RequestID: "r", CorrelationID: "c", Payload: map[string]any{"n": i}, Now: now})
		require.NoError(t, err)
		evs[i] = ev
	}
	require.NoError(t, store.Append(ctx, evs...))
	// The first 200 were delivered an hour before the window, the rest inside it.
	done := 0
	for done < n {
		claimed, err := store.Claim(ctx, ports.ClaimParams{Owner: "r1", Limit: 500, LeaseFor: time.Minute, Now: now})
		require.NoError(t, err)
		require.NotEmpty(t, claimed)
		for _, ev := range claimed {
			at := now.Add(time.Second)
			if done < 200 {
				at = now.Add(-time.Hour)
			}
			lost, err := store.Complete(ctx, "r1", at, []ports.LeaseRef{{ID: ev.ID, Token: ev.Lease.Token}})
			require.NoError(t, err)
			require.Empty(t, lost)
			done++
		}
	}
	inWindow, err := countSince(ctx, store, now)
	require.NoError(t, err)

	pub := memory.NewPublisher()
	f := &flaky{Publisher: pub}
	sent, err := relay.Redeliver(ctx, store, f, ports.SystemClock, now)
	require.NoError(t, err)
	require.Equal(t, n-200, inWindow)
	require.Equal(t, inWindow, sent)
	require.Len(t, pub.Tasks(), inWindow, "every delivery of the window is published again, once")
	require.Greater(t, f.calls, 1, "the failed first publish was retried")

	_, err = relay.Redeliver(ctx, store, downPublisher{}, ports.SystemClock, now)
	require.ErrorIs(t, err, ports.ErrUnavailable, "a queue that stays down is reported")
}

type downPublisher struct{}

func (downPublisher) Publish(_ context.Context, envs []outbox.Envelope) []error {
	errs := make([]error, len(envs))
	for i := range errs {
		errs[i] = errors.Join(ports.ErrUnavailable)
	}
	return errs
}

func countSince(ctx context.Context, s ports.OutboxDeliveredReader, from time.Time) (int, error) {
	n := 0
	var cur ports.DeliveredCursor
	for {
		page, err := s.DeliveredSince(ctx, from, cur, 500)
		if err != nil {
			return 0, err
		}
		n += len(page)
		if len(page) < 500 {
			return n, nil
		}
		last := page[len(page)-1]
		cur = ports.DeliveredCursor{DeliveredAt: *last.DeliveredAt, ID: last.ID}
	}
}
