package queue_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/core/outbox"
)

func TestEnqueueTaskRefusesUnstructuredPayloads(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tests := []struct {
		name    string
		payload any
	}{
		{"bytes", []byte(`{"order_id":"o1"}`)},
		{"raw message", json.RawMessage(`{"order_id":"o1"}`)},
		{"string", `{"order_id":"o1"}`},
		{"int", 42},
		{"nil", nil},
		{"nil struct pointer", (*orderPlaced)(nil)},
		{"slice", []orderPlaced{{OrderID: "o1"}}},
		{"int-keyed map", map[int]string{1: "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			info, err := h.enq.EnqueueTask(context.Background(), "order.placed", tt.payload)
			require.Nil(t, info, "payload %#v", tt.payload)
			var pe *queue.PayloadError
			require.ErrorAs(t, err, &pe, "payload %#v", tt.payload)
			require.ErrorIs(t, err, outbox.ErrPayloadNotStructured, "payload %#v", tt.payload)
			require.Equal(t, outbox.ClassPermanent, outbox.Classify(err), "payload %#v", tt.payload)
			require.Equal(t, "PAYLOAD_INVALID", outbox.ErrorCode(err), "payload %#v", tt.payload)
		})
	}
	t.Cleanup(func() { require.Zero(t, h.queueSize(t), "refused payloads must not be enqueued") })
}

func TestEnqueueTaskRefusesEmptyType(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, typ := range []string{"", "  "} {
		_, err := h.enq.EnqueueTask(context.Background(), typ, orderPlaced{OrderID: "o1"})
		require.ErrorIs(t, err, queue.ErrEmptyTaskType, "type %q", typ)
	}
}

func TestEnqueueTaskDeliversStructAndMapToWorker(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	got := make(chan orderPlaced, 4)
	mux, err := queue.NewMux(discardLogger(), []queue.Consumer{{
		EventType: "order.placed",
		Raw:       true,
		Handler: queue.HandleTask(func(_ context.Context, p orderPlaced) error {
			got <- p
			return nil
		}),
	}})
	require.NoError(t, err)
	h.startWorker(t, mux, discardLogger())

	tests := []struct {
		name    string
		payload any
		want    orderPlaced
	}{
		{"struct", orderPlaced{OrderID: "o1", Email: "a@example.com", Amount: 5}, orderPlaced{OrderID: "o1", Email: "a@example.com", Amount: 5}},
		{"struct pointer", &orderPlaced{OrderID: "o2", Amount: 6}, orderPlaced{OrderID: "o2", Amount: 6}},
		{"map", map[string]any{"order_id": "o3", "amount": 7}, orderPlaced{OrderID: "o3", Amount: 7}},
	}
	want := map[string]orderPlaced{}
	for _, tt := range tests {
		info, err := h.enq.EnqueueTask(context.Background(), "order.placed", tt.payload)
		require.NoError(t, err, "case %s", tt.name)
		require.Equal(t, h.queue, info.Queue, "case %s", tt.name)
		require.Equal(t, queue.DefaultMaxRetry, info.MaxRetry, "case %s", tt.name)
		require.Equal(t, queue.DefaultRetention, info.Retention, "case %s", tt.name)
		want[tt.want.OrderID] = tt.want
	}
	for range tests {
		select {
		case p := <-got:
			require.Equal(t, want[p.OrderID], p, "decoded payload of %s", p.OrderID)
			delete(want, p.OrderID)
		case <-time.After(15 * time.Second):
			t.Fatalf("worker did not receive tasks %v", want)
		}
	}
}

func TestEnqueueTaskOptionsOverrideDefaults(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	info, err := h.enq.EnqueueTask(context.Background(), "order.placed", orderPlaced{OrderID: "o1"},
		asynq.MaxRetry(3), asynq.TaskID("order-o1"), asynq.ProcessIn(time.Hour))
	require.NoError(t, err)
	require.Equal(t, 3, info.MaxRetry)
	require.Equal(t, "order-o1", info.ID)
	_, err = h.enq.EnqueueTask(context.Background(), "order.placed", orderPlaced{OrderID: "o1"}, asynq.TaskID("order-o1"))
	require.ErrorIs(t, err, asynq.ErrTaskIDConflict, "second enqueue under the same task id")
}

func TestNewPublisherValidatesConfig(t *testing.T) {
	t.Parallel()
	c := asynq.NewClient(asynq.RedisClientOpt{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = c.Close() })
	tests := []struct {
		name   string
		client *asynq.Client
		cfg    queue.Config
	}{
		{"nil client", nil, queue.Config{}},
		{"negative retention", c, queue.Config{Retention: -time.Second}},
		{"negative max retry", c, queue.Config{MaxRetry: -1}},
		{"negative timeout", c, queue.Config{Timeout: -time.Second}},
		{"negative concurrency", c, queue.Config{PublishConcurrency: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := queue.NewPublisher(tt.client, tt.cfg)
			require.Error(t, err, "config %+v", tt.cfg)
		})
	}
	e, err := queue.NewPublisher(c, queue.Config{})
	require.NoError(t, err)
	require.Equal(t, queue.Config{Queue: queue.DefaultQueue, Retention: queue.DefaultRetention, MaxRetry: queue.DefaultMaxRetry,
		PublishConcurrency: queue.DefaultPublishConcurrency}, e.Config())
}
