package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/core/outbox"

	"github.com/july/template/contracttests/testinfra"
)

func TestHandleDecodesTypedPayloadAndEnrichesLogs(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var logs testinfra.LogBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	type delivery struct {
		env     outbox.Envelope
		stored  bool
		payload orderPlaced
	}
	got := make(chan delivery, 1)
	mux, err := queue.NewMux(logger, []queue.Consumer{{
		EventType: "order.placed",
		Handler: queue.Handle(func(ctx context.Context, env outbox.Envelope, p orderPlaced) error {
			_, stored := queue.EnvelopeFrom(ctx)
			queue.LoggerFrom(ctx).InfoContext(ctx, "order handled")
			got <- delivery{env: env, stored: stored, payload: p}
			return nil
		}),
	}})
	require.NoError(t, err)
	h.startWorker(t, mux, discardLogger())
	env := envelope(t, "order.placed", orderPlaced{OrderID: "o1", Email: "a@example.com", Amount: 9})

	require.Equal(t, []error{nil}, h.enq.Publish(context.Background(), []outbox.Envelope{env}))

	select {
	case d := <-got:
		require.Equal(t, env, d.env)
		require.True(t, d.stored, "EnvelopeFrom inside the handler")
		require.Equal(t, orderPlaced{OrderID: "o1", Email: "a@example.com", Amount: 9}, d.payload)
	case <-time.After(15 * time.Second):
		t.Fatal("handler never called")
	}
	lines := logs.Records(t, "order handled")
	require.Len(t, lines, 1, "logs: %s", logs.String())
	for k, want := range map[string]string{
		"request_id": env.RequestID, "correlation_id": env.CorrelationID,
		"event_id": env.EventID, "event_type": env.EventType,
	} {
		require.Equal(t, want, lines[0][k], "log field %s in %v", k, lines[0])
	}
	h.requireState(t, env.EventID, asynq.TaskStateCompleted) // retained for dedup
}

// REGRESSION: a producer that marshals already-encoded bytes again ships a
// JSON string (Base64 inside). Such a task must never reach the typed
// handler and must be archived at once, not retried 25 times.
func TestDoubleMarshalledEnvelopeNeverReachesHandler(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var logs testinfra.LogBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	var calls atomic.Int32
	mux, err := queue.NewMux(logger, []queue.Consumer{{
		EventType: "order.placed",
		Handler: queue.Handle(func(context.Context, outbox.Envelope, orderPlaced) error {
			calls.Add(1)
			return nil
		}),
	}})
	require.NoError(t, err)
	h.startWorker(t, mux, discardLogger())

	env := envelope(t, "order.placed", orderPlaced{OrderID: "o1", Email: "secret@example.com"})
	once, err := json.Marshal(env)
	require.NoError(t, err)
	twice, err := json.Marshal(once) // []byte -> Base64 JSON string
	require.NoError(t, err)
	innerTwice := env
	innerTwice.EventID = envelope(t, "order.placed", orderPlaced{}).EventID
	innerTwice.Payload, err = json.Marshal(string(env.Payload)) // payload as a JSON string
	require.NoError(t, err)
	innerBytes, err := json.Marshal(innerTwice)
	require.NoError(t, err)

	tests := []struct {
		name    string
		id      string
		payload []byte
	}{
		{"whole envelope marshalled twice", env.EventID, twice},
		{"payload marshalled twice", innerTwice.EventID, innerBytes},
	}
	for _, tt := range tests {
		_, err := h.client.Enqueue(asynq.NewTask("order.placed", tt.payload), asynq.Queue(h.queue), asynq.TaskID(tt.id))
		require.NoError(t, err, "case %s", tt.name)
	}
	for _, tt := range tests {
		info := h.requireState(t, tt.id, asynq.TaskStateArchived)
		require.Zero(t, info.Retried, "case %s: must not be retried", tt.name)
	}
	require.Zero(t, calls.Load(), "the typed handler must never see a double-marshalled payload")

	warns := logs.Records(t, "asynq queue: dropped task with malformed envelope")
	require.Len(t, warns, len(tests), "logs: %s", logs.String())
	ids := []any{warns[0]["task_id"], warns[1]["task_id"]}
	require.ElementsMatch(t, []any{env.EventID, innerTwice.EventID}, ids)
	for _, w := range warns {
		require.Equal(t, "WARN", w["level"])
	}
	require.NotContains(t, logs.String(), "secret", "the payload must never be logged")
	require.NotContains(t, logs.String(), "ZXZlbnRfaWQ", "the payload must never be logged") // base64 of "event_id"
}

func TestHandlerErrorsRetryUnlessPermanent(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var permCalls, transCalls atomic.Int32
	mux, err := queue.NewMux(discardLogger(), []queue.Consumer{
		{EventType: "order.permanent", Handler: queue.Handle(func(context.Context, outbox.Envelope, orderPlaced) error {
			permCalls.Add(1)
			return outbox.Permanent("ORDER_UNKNOWN", "order does not exist")
		})},
		{EventType: "order.transient", Handler: queue.Handle(func(context.Context, outbox.Envelope, orderPlaced) error {
			transCalls.Add(1)
			return errors.New("downstream timed out")
		})},
	})
	require.NoError(t, err)
	h.startWorker(t, mux, discardLogger())
	perm := envelope(t, "order.permanent", orderPlaced{OrderID: "o1"})
	trans := envelope(t, "order.transient", orderPlaced{OrderID: "o2"})

	for i, err := range h.enq.Publish(context.Background(), []outbox.Envelope{perm, trans}) {
		require.NoError(t, err, "envelope %d", i)
	}

	info := h.requireState(t, perm.EventID, asynq.TaskStateArchived)
	require.Zero(t, info.Retried, "a permanent error is not retried")
	require.Contains(t, info.LastErr, "ORDER_UNKNOWN")
	require.Equal(t, int32(1), permCalls.Load())
	info = h.requireState(t, trans.EventID, asynq.TaskStateRetry)
	require.Equal(t, 1, info.Retried, "a transient error is retried")
	require.Equal(t, int32(1), transCalls.Load())
}

func TestNewMuxRejectsBadConsumers(t *testing.T) {
	t.Parallel()
	ok := queue.Handle(func(context.Context, outbox.Envelope, orderPlaced) error { return nil })
	tests := []struct {
		name      string
		consumers []queue.Consumer
	}{
		{"duplicate type", []queue.Consumer{{EventType: "a.b", Handler: ok}, {EventType: "a.b", Handler: ok}}},
		{"empty type", []queue.Consumer{{EventType: " ", Handler: ok}}},
		{"nil handler", []queue.Consumer{{EventType: "a.b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mux, err := queue.NewMux(discardLogger(), tt.consumers)
			require.Error(t, err, "consumers %+v", tt.consumers)
			require.Nil(t, mux)
		})
	}
}

func TestNewMuxRoutesExactTypesOnly(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	mux, err := queue.NewMux(discardLogger(), []queue.Consumer{{
		EventType: "order",
		Raw:       true,
		Handler:   asynq.HandlerFunc(func(context.Context, *asynq.Task) error { calls.Add(1); return nil }),
	}})
	require.NoError(t, err)

	err = mux.ProcessTask(context.Background(), asynq.NewTask("order.created", []byte(`{}`)))
	require.Error(t, err, "asynq would route order.created to the order prefix")
	require.False(t, errors.Is(err, asynq.SkipRetry), "an unknown type is retried: a newer worker may handle it")
	require.NoError(t, mux.ProcessTask(context.Background(), asynq.NewTask("order", []byte(`{}`))))
	require.Equal(t, int32(1), calls.Load())
}

// The default consumer backoff starts short (asynq's own waits 15-45 s
// before the first retry), doubles, is capped and jittered.
func TestRetryBackoff(t *testing.T) {
	t.Parallel()

	f := queue.RetryBackoff(time.Second, time.Minute)
	for n, want := range map[int]time.Duration{0: time.Second, 1: 2 * time.Second, 3: 8 * time.Second} {
		for range 20 {
			d := f(n, nil, nil)
			require.GreaterOrEqual(t, d, want/2, "retry %d", n)
			require.LessOrEqual(t, d, want*3/2, "retry %d", n)
		}
	}
	for range 20 {
		require.LessOrEqual(t, f(30, nil, nil), time.Minute, "capped")
	}
}

// RetrySpan bounds every wait RetryBackoff draws plus the attempts'
// timeouts: outbox retention refuses a window shorter than it.
func TestRetrySpanBoundsTheRetries(t *testing.T) {
	t.Parallel()

	for _, c := range []struct {
		retries   int
		base, max time.Duration
	}{{25, time.Second, time.Minute}, {1, time.Hour, 24 * time.Hour}, {100, 10 * time.Millisecond, time.Hour}} {
		f := queue.RetryBackoff(c.base, c.max)
		worst := time.Duration(0)
		for n := range c.retries {
			longest := time.Duration(0)
			for range 200 {
				longest = max(longest, f(n, nil, nil))
			}
			worst += longest
		}
		attempts := time.Duration(c.retries+1) * time.Minute
		span := queue.RetrySpan(c.retries, c.base, c.max, time.Minute)
		require.GreaterOrEqual(t, span, attempts+worst, "%+v: the span must cover every wait drawn", c)
		require.LessOrEqual(t, span, attempts+worst*2, "%+v: the span is a bound, not a multiple of it", c)
	}
	require.Equal(t, 13*time.Hour+20*time.Minute+34500*time.Millisecond,
		queue.RetrySpan(queue.DefaultMaxRetry, queue.DefaultRetryBase, queue.DefaultRetryMax, 0),
		"the defaults: 26 attempts of asynq's 30 min and 25 waits of up to 1.5x, capped at 1 min")
}
