package queue_test

import (
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/contracttests/testinfra"
	"github.com/july/template/core/outbox"
)

// harness is one test's private asynq queue on the shared Redis.
type harness struct {
	url    string
	queue  string
	opt    asynq.RedisConnOpt
	client *asynq.Client
	insp   *asynq.Inspector
	enq    *queue.Publisher
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	r := testinfra.NewRedis(t)
	opt, err := asynq.ParseRedisURI(r.URL)
	require.NoError(t, err, "parse %s", r.URL)
	// Registered after NewRedis, so the queue is deleted before r.Client
	// closes and after any worker started later has shut down.
	h := &harness{url: r.URL, queue: r.AsynqQueue(t, "aq"), opt: opt, client: asynq.NewClient(opt), insp: asynq.NewInspector(opt)}
	t.Cleanup(func() {
		_ = h.insp.Close()
		_ = h.client.Close()
	})
	h.enq, err = queue.NewPublisher(h.client, queue.Config{Queue: h.queue})
	require.NoError(t, err)
	return h
}

// startWorker runs an asynq server on the harness queue until the test ends.
func (h *harness) startWorker(t *testing.T, handler asynq.Handler, logger *slog.Logger) {
	t.Helper()
	srv := queue.NewServer(h.opt, queue.ServerConfig{
		Queues: map[string]int{h.queue: 1}, Concurrency: 2, Logger: logger, ShutdownTimeout: 2 * time.Second,
	})
	require.NoError(t, srv.Start(handler))
	t.Cleanup(srv.Shutdown)
}

// requireState polls until the task reaches want or the wait runs out.
func (h *harness) requireState(t *testing.T, id string, want asynq.TaskState) *asynq.TaskInfo {
	t.Helper()
	var info *asynq.TaskInfo
	require.Eventually(t, func() bool {
		var err error
		info, err = h.insp.GetTaskInfo(h.queue, id)
		return err == nil && info.State == want
	}, 15*time.Second, 50*time.Millisecond, "task %s in queue %s never reached state %v (last %+v)", id, h.queue, want, info)
	return info
}

func (h *harness) queueSize(t *testing.T) int {
	t.Helper()
	queues, err := h.insp.Queues()
	require.NoError(t, err)
	if !slices.Contains(queues, h.queue) {
		return 0 // asynq creates a queue on its first task
	}
	qi, err := h.insp.GetQueueInfo(h.queue)
	require.NoError(t, err, "queue info %s", h.queue)
	return qi.Size
}

type orderPlaced struct {
	OrderID string `json:"order_id"`
	Email   string `json:"email"`
	Amount  int    `json:"amount"`
}

// envelope returns a valid envelope with a fresh event id.
func envelope(t *testing.T, eventType string, p orderPlaced) outbox.Envelope {
	t.Helper()
	b, err := outbox.MarshalPayload(p)
	require.NoError(t, err)
	return outbox.Envelope{
		EventID:        uuid.NewString(),
		EventType:      eventType,
		PayloadVersion: 1,
		AggregateType:  "order",
		AggregateID:    p.OrderID,
		ResourceType:   "order",
		ResourceID:     p.OrderID,
		RequestID:      "req-" + p.OrderID,
		CorrelationID:  "corr-" + p.OrderID,
		OccurredAt:     time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Payload:        b,
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
