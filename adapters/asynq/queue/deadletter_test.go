package queue_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/core/outbox"

	"github.com/july/template/contracttests/testinfra"
)

// deadLetters records DeadLetterFunc calls by task id.
type deadLetters struct {
	mu    sync.Mutex
	calls map[string][]string // task id -> errors
}

func (d *deadLetters) fn(panicOn string) queue.DeadLetterFunc {
	return func(ctx context.Context, task *asynq.Task, err error) {
		id, _ := asynq.GetTaskID(ctx)
		d.mu.Lock()
		d.calls[id] = append(d.calls[id], err.Error())
		d.mu.Unlock()
		if id == panicOn {
			panic("dead-letter store exploded")
		}
	}
}

func (d *deadLetters) of(id string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.calls[id]...)
}

// startDeadLetterWorker runs a server on h's queue with three raw handlers:
// "t.permanent" fails permanently, "t.transient" always fails transiently
// and "t.revoke" revokes itself.
func startDeadLetterWorker(t *testing.T, h *harness, dl queue.DeadLetterFunc, logger *slog.Logger) (transientCalls *atomic.Int32) {
	t.Helper()
	transientCalls = new(atomic.Int32)
	mux := asynq.NewServeMux()
	mux.HandleFunc("t.permanent", func(context.Context, *asynq.Task) error {
		return fmt.Errorf("%w: %w", outbox.Permanent("ORDER_UNKNOWN", "order gone; token=s3cr3t-value"), asynq.SkipRetry)
	})
	mux.HandleFunc("t.transient", func(context.Context, *asynq.Task) error {
		transientCalls.Add(1)
		return errors.New("downstream timed out")
	})
	mux.HandleFunc("t.revoke", func(context.Context, *asynq.Task) error { return asynq.RevokeTask })
	srv := queue.NewServer(h.opt, queue.ServerConfig{
		Queues: map[string]int{h.queue: 1}, Concurrency: 2, Logger: logger, ShutdownTimeout: 2 * time.Second,
		DeadLetterFunc: dl,
		RetryDelayFunc: func(int, error, *asynq.Task) time.Duration { return 10 * time.Millisecond },
	})
	require.NoError(t, srv.Start(mux))
	t.Cleanup(srv.Shutdown)
	return transientCalls
}

func TestDeadLetterFuncOnFinalFailureOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var logs testinfra.LogBuffer
	dl := &deadLetters{calls: map[string][]string{}}
	permID, transID, revokeID, afterPanicID := uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
	transientCalls := startDeadLetterWorker(t, h, dl.fn(permID), slog.New(slog.NewJSONHandler(&logs, nil)))

	enqueue := func(typ, id string, opts ...asynq.Option) {
		t.Helper()
		_, err := h.client.Enqueue(asynq.NewTask(typ, []byte(`{}`)), append(opts, asynq.Queue(h.queue), asynq.TaskID(id))...)
		require.NoError(t, err, "enqueue %s %s", typ, id)
	}
	enqueue("t.permanent", permID)
	enqueue("t.transient", transID, asynq.MaxRetry(1))
	enqueue("t.revoke", revokeID)

	// Permanent: archived at once, dead-lettered once, even though the
	// DeadLetterFunc panicked on it.
	h.requireState(t, permID, asynq.TaskStateArchived)
	require.Eventually(t, func() bool { return len(dl.of(permID)) == 1 }, 15*time.Second, 20*time.Millisecond, "dead letter for %s", permID)
	require.Contains(t, dl.of(permID)[0], "ORDER_UNKNOWN", "the raw error is passed on")

	// Transient with MaxRetry(1): two attempts, dead-lettered only after
	// the last one.
	info := h.requireState(t, transID, asynq.TaskStateArchived)
	require.Equal(t, 1, info.Retried)
	require.Equal(t, int32(2), transientCalls.Load())
	require.Eventually(t, func() bool { return len(dl.of(transID)) == 1 }, 15*time.Second, 20*time.Millisecond, "dead letter for %s", transID)

	// The worker survived the panic and still dead-letters.
	enqueue("t.permanent", afterPanicID)
	require.Eventually(t, func() bool { return len(dl.of(afterPanicID)) == 1 }, 15*time.Second, 20*time.Millisecond, "dead letter after a panic")

	require.Eventually(t, func() bool {
		_, err := h.insp.GetTaskInfo(h.queue, revokeID)
		return errors.Is(err, asynq.ErrTaskNotFound)
	}, 15*time.Second, 20*time.Millisecond, "revoked task %s is dropped", revokeID)
	require.Empty(t, dl.of(revokeID), "a revoked task is dropped, not dead-lettered")
	require.Len(t, dl.of(permID), 1, "exactly once")
	require.Len(t, dl.of(transID), 1, "exactly once")

	failed := logs.Records(t, "asynq queue: task failed")
	require.Len(t, failed, 5, "one line per failed attempt: %s", logs.String()) // perm, 2x trans, revoke, afterPanic
	require.NotContains(t, logs.String(), "s3cr3t-value", "handler errors are redacted before logging")
	require.Len(t, logs.Records(t, "asynq queue: dead-letter func panicked; the failure is only in asynq's archive"), 1, "logs: %s", logs.String())
}
