package contracttests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// PublisherFixture is one isolated publisher with a view of its queue.
type PublisherFixture struct {
	// Publisher is the implementation under test.
	Publisher ports.Publisher
	// Tasks returns the envelopes the queue holds, decoded from what a
	// consumer would receive, in any order.
	Tasks func(t *testing.T) []outbox.Envelope
	// Outage takes Publisher's queue away (see Outage). Required: the
	// outage case fails without it.
	Outage Outage[ports.Publisher]
}

// RunPublisher checks a ports.Publisher against the contract on the port.
func RunPublisher(t *testing.T, newFixture func(t *testing.T) PublisherFixture) {
	t.Helper()

	t.Run("Publish/OneTaskPerEventWithObjectPayload", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		envs := []outbox.Envelope{envelope(t, 1), envelope(t, 2), envelope(t, 3)}
		errs := f.Publisher.Publish(t.Context(), envs)
		require.Len(t, errs, len(envs), "rule: Publish returns one error per envelope")
		for i, err := range errs {
			require.NoError(t, err, "envelope %d", i)
		}
		got := byEventID(f.Tasks(t))
		require.Len(t, got, 3)
		for _, want := range envs {
			task, ok := got[want.EventID]
			require.True(t, ok, "rule: the queue's task id is the event_id (%s missing)", want.EventID)
			require.JSONEq(t, string(want.Payload), string(task.Payload),
				"rule: the payload arrives as the same JSON object, never re-encoded (Base64) bytes")
			require.True(t, want.OccurredAt.Equal(task.OccurredAt), "rule: occurred_at travels unchanged: want %s, got %s", want.OccurredAt, task.OccurredAt)
			want.Payload, task.Payload, want.OccurredAt, task.OccurredAt = nil, nil, time.Time{}, time.Time{}
			require.Equal(t, want, task, "rule: every envelope field (request_id, correlation_id, aggregate, resource) travels unchanged")
		}
	})

	t.Run("Publish/SameEventIDIsAbsorbed", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		env := envelope(t, 7)
		require.NoError(t, f.Publisher.Publish(t.Context(), []outbox.Envelope{env})[0])
		require.NoError(t, f.Publisher.Publish(t.Context(), []outbox.Envelope{env})[0],
			"rule: a re-delivery of an event_id the queue holds is a success, not an error")
		require.Len(t, f.Tasks(t), 1, "rule: a re-delivery never creates a second task")
	})

	t.Run("Publish/DuplicateInsideOneBatch", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		env := envelope(t, 8)
		errs := f.Publisher.Publish(t.Context(), []outbox.Envelope{env, envelope(t, 9), env})
		for i, err := range errs {
			require.NoError(t, err, "envelope %d", i)
		}
		require.Len(t, f.Tasks(t), 2)
	})

	t.Run("Publish/InvalidEnvelopeIsPermanent", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		noID := envelope(t, 1)
		noID.EventID = ""
		str := envelope(t, 2)
		str.Payload = json.RawMessage(`"eyJvcmRlcl9pZCI6MX0="`) // a payload marshalled twice
		errs := f.Publisher.Publish(t.Context(), []outbox.Envelope{noID, str, envelope(t, 3)})
		for i, err := range errs[:2] {
			require.Error(t, err, "envelope %d", i)
			require.Equal(t, outbox.ClassPermanent, outbox.Classify(err),
				"rule: an envelope the queue can never accept fails permanently (envelope %d: %v)", i, err)
		}
		require.NoError(t, errs[2], "one bad envelope does not fail its neighbours")
		require.Len(t, f.Tasks(t), 1)
	})

	t.Run("Outage/EveryMethodUnavailableAndNothingChanges", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		requireOutageHook(t, f.Outage == nil, "PublisherFixture.Outage")
		envs := []outbox.Envelope{envelope(t, 1), envelope(t, 2)}

		down, restore := f.Outage(t, f.Publisher)
		start := time.Now()
		errs := down.Publish(t.Context(), envs)
		require.Less(t, time.Since(start), OutageBound, OutageRule)
		require.Len(t, errs, 2, "rule: Publish returns one error per envelope")
		for i, err := range errs {
			require.Error(t, err, "envelope %d", i)
			require.True(t, errors.Is(err, ports.ErrUnavailable),
				"rule: an unreachable queue wraps ports.ErrUnavailable (envelope %d: %v)", i, err)
			require.Equal(t, outbox.ClassTransient, outbox.Classify(err), "rule: an unreachable queue is transient")
		}

		restore()
		require.Empty(t, f.Tasks(t), "after the outage no task was queued: %s", OutageRule)
		require.NoError(t, f.Publisher.Publish(t.Context(), envs[:1])[0], "after restore the publisher publishes again")
		require.Len(t, f.Tasks(t), 1, "after restore the publisher publishes again")
	})

	t.Run("Publish/CanceledContextIsTransient", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		errs := f.Publisher.Publish(ctx, []outbox.Envelope{envelope(t, 1)})
		require.Len(t, errs, 1, "rule: Publish returns one error per envelope")
		require.Error(t, errs[0], "a publish with a canceled context must not report success")
		require.Equal(t, outbox.ClassTransient, outbox.Classify(errs[0]),
			"rule: a publish cut short by its context is transient, so the event is retried and never failed for good (%v)", errs[0])
	})
}

func envelope(t *testing.T, n int) outbox.Envelope {
	t.Helper()
	ev, err := outbox.New(outbox.NewParams{
		EventID: uuid.NewString(), EventType: "contract.published", PayloadVersion: 1,
		AggregateType: "order", AggregateID: fmt.Sprint(n), ResourceType: "order", ResourceID: fmt.Sprint(n),
		RequestID: "req-" + uuid.NewString()[:8], CorrelationID: "corr-" + fmt.Sprint(n),
		Payload: map[string]any{"n": n, "note": "订单"}, Now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
	})
	require.NoError(t, err)
	return ev.Envelope()
}

func byEventID(envs []outbox.Envelope) map[string]outbox.Envelope {
	m := make(map[string]outbox.Envelope, len(envs))
	for _, e := range envs {
		m[e.EventID] = e
	}
	return m
}
