package queue

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/stretchr/testify/require"

	"github.com/july/template/contracttests/testinfra"
)

// The idle wait depends on recognising asynq's dequeue script among the
// commands of its Redis client (dequeued). Were it missed, asynq's own 1 ms
// sleep would be all an idle worker waits: hundreds of Redis calls a
// second. So: an idle worker on two empty queues comes to wait on its
// Wake, stays there (an hour-long check) while a task arrives that nobody
// signals, and starts it on Signal.
func TestWakeStartsIdleWorker(t *testing.T) {
	t.Parallel()
	r := testinfra.NewRedis(t)
	opt, err := asynq.ParseRedisURI(r.URL)
	require.NoError(t, err)
	q1, q2 := r.AsynqQueue(t, "wk"), r.AsynqQueue(t, "wk")
	client := asynq.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })
	wake := NewWake()
	srv, hook := newServer(opt, ServerConfig{Queues: map[string]int{q1: 1, q2: 1}, Concurrency: 1,
		ShutdownTimeout: 2 * time.Second, TaskCheckInterval: time.Hour, Wake: wake})
	started := make(chan string, 1)
	require.NoError(t, srv.Start(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		started <- id
		return nil
	})))
	t.Cleanup(func() { wake.Close(); srv.Shutdown() })

	require.Eventually(t, func() bool { return hook.waits.Load() == 1 }, 30*time.Second, 5*time.Millisecond,
		"the idle worker never waited on its Wake: asynq's dequeue script was not recognised")
	id := uuid.NewString()
	_, err = client.Enqueue(asynq.NewTask("t", nil), asynq.Queue(q2), asynq.TaskID(id))
	require.NoError(t, err)
	require.Equal(t, int64(1), hook.waits.Load(), "still the first wait: nothing signalled")
	wake.Signal()
	select {
	case got := <-started:
		require.Equal(t, id, got)
	case <-time.After(30 * time.Second):
		t.Fatal("the signalled worker did not start the task")
	}
	require.Eventually(t, func() bool { return hook.waits.Load() == 2 }, 30*time.Second, 5*time.Millisecond,
		"after the task, both queues empty again, the worker waits again")
}
