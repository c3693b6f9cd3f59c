package queue_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

func TestPublishBatchEnqueuesEveryEnvelope(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	envs := make([]outbox.Envelope, 50)
	for i := range envs {
		envs[i] = envelope(t, "order.placed", orderPlaced{OrderID: "o" + strconv.Itoa(i)})
	}
	envs = append(envs, envs[3]) // a duplicate inside one batch is absorbed too

	errs := h.enq.Publish(context.Background(), envs)
	require.Len(t, errs, len(envs))
	for i, err := range errs {
		require.NoError(t, err, "envelope %d (%s)", i, envs[i].EventID)
	}
	require.Equal(t, 50, h.queueSize(t))
	for _, env := range envs {
		_, err := h.insp.GetTaskInfo(h.queue, env.EventID)
		require.NoError(t, err, "task for event %s", env.EventID)
	}
}

func TestPublishRefusesInvalidEnvelopesPermanently(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	valid := envelope(t, "order.placed", orderPlaced{OrderID: "o1"})
	payloadJSON, err := json.Marshal(valid.Payload)
	require.NoError(t, err)
	tests := []struct {
		name   string
		mutate func(*outbox.Envelope)
	}{
		{"empty event id", func(e *outbox.Envelope) { e.EventID = "" }},
		{"empty event type", func(e *outbox.Envelope) { e.EventType = " " }},
		{"nil payload", func(e *outbox.Envelope) { e.Payload = nil }},
		{"payload marshalled twice", func(e *outbox.Envelope) { e.Payload, _ = json.Marshal(string(payloadJSON)) }},
		{"payload not json", func(e *outbox.Envelope) { e.Payload = json.RawMessage(`{not json`) }},
	}
	envs := make([]outbox.Envelope, 0, len(tests)+1)
	for _, tt := range tests {
		env := valid
		tt.mutate(&env)
		envs = append(envs, env)
	}
	envs = append(envs, valid)

	errs := h.enq.Publish(context.Background(), envs)
	for i, tt := range tests {
		require.Error(t, errs[i], "case %s", tt.name)
		require.Equal(t, outbox.ClassPermanent, outbox.Classify(errs[i]), "case %s: %v", tt.name, errs[i])
		require.Equal(t, "ENVELOPE_INVALID", outbox.ErrorCode(errs[i]), "case %s", tt.name)
	}
	require.NoError(t, errs[len(tests)], "the valid envelope of the batch")
	require.Equal(t, 1, h.queueSize(t), "only the valid envelope is enqueued")
}

// TestUnreachableRedisErrorsAreTypedAndRedacted checks what this adapter
// adds to the contract's outage case (RunPublisher): the typed
// error, its code, a message without the Redis address, and EnqueueTask.
func TestUnreachableRedisErrorsAreTypedAndRedacted(t *testing.T) {
	t.Parallel()
	c := asynq.NewClient(asynq.RedisClientOpt{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	enq, err := queue.NewPublisher(c, queue.Config{Queue: "unreachable"})
	require.NoError(t, err)

	errs := enq.Publish(context.Background(), []outbox.Envelope{envelope(t, "order.placed", orderPlaced{OrderID: "o1"})})
	_, enqErr := enq.EnqueueTask(context.Background(), "order.placed", orderPlaced{OrderID: "o3"})
	require.ErrorIs(t, enqErr, ports.ErrUnavailable, "EnqueueTask on an unreachable Redis")

	for i, err := range append(errs, enqErr) {
		var ue *queue.UnavailableError
		require.ErrorAs(t, err, &ue, "error %d", i)
		require.Equal(t, "QUEUE_UNAVAILABLE", outbox.ErrorCode(err), "error %d", i)
		require.NotContains(t, err.Error(), "127.0.0.1", "error %d must not leak the Redis address", i)
		require.Contains(t, err.Error(), "connection failed", "error %d", i)
	}
}

// TestPublishCanceledContextKeepsCause checks that the transient error of
// a canceled publish (RunPublisher's case) still names context.Canceled.
func TestPublishCanceledContextKeepsCause(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	errs := h.enq.Publish(ctx, []outbox.Envelope{envelope(t, "order.placed", orderPlaced{OrderID: "o1"})})
	require.ErrorIs(t, errs[0], context.Canceled)
	require.ErrorIs(t, errs[0], ports.ErrUnavailable)
}
