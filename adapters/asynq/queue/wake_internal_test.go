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

// bellWorld is an idle worker whose check (an hour) never runs, woken
// only through its queue's Bell, and, as another process, a Publisher with
// its own client and Bell. started receives each started task's id.
type bellWorld struct {
	r       *testinfra.Redis
	queue   string
	hook    *idleHook
	pub     *Publisher
	started chan string
}

func newBellWorld(tb testing.TB) *bellWorld {
	tb.Helper()
	r := testinfra.NewRedis(tb)
	opt, err := asynq.ParseRedisURI(r.URL)
	require.NoError(tb, err)
	w := &bellWorld{r: r, queue: r.AsynqQueue(tb, "bell"), started: make(chan string, 16)}
	wake := NewWake()
	srv, hook := newServer(opt, ServerConfig{Queues: map[string]int{w.queue: 1}, Concurrency: 1,
		ShutdownTimeout: 2 * time.Second, TaskCheckInterval: time.Hour, Wake: wake})
	w.hook = hook
	require.NoError(tb, srv.Start(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		w.started <- id
		return nil
	})))
	tb.Cleanup(func() { wake.Close(); srv.Shutdown() })
	listener, err := NewBell(opt, w.queue)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = listener.Close() })
	go listener.Listen(tb.Context(), wake)

	client := asynq.NewClient(opt)
	tb.Cleanup(func() { _ = client.Close() })
	ringer, err := NewBell(opt, w.queue)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = ringer.Close() })
	w.pub, err = NewPublisher(client, Config{Queue: w.queue, Bell: ringer})
	require.NoError(tb, err)

	require.Eventually(tb, func() bool { return hook.waits.Load() == 1 }, 30*time.Second, 5*time.Millisecond, "the worker is idle")
	require.Eventually(tb, func() bool {
		a, err := r.Client.Do(tb.Context(), r.Client.B().PubsubNumsub().Channel(BellChannel(w.queue)).Build()).ToArray()
		if err != nil || len(a) != 2 {
			return false
		}
		n, err := a[1].AsInt64()
		return err == nil && n == 1
	}, 30*time.Second, 5*time.Millisecond, "the listener subscribed")
	return w
}

// enqueue enqueues one task from the other process and returns its id.
func (w *bellWorld) enqueue(tb testing.TB) string {
	tb.Helper()
	id := uuid.NewString()
	_, err := w.pub.EnqueueTask(tb.Context(), "t", map[string]any{"n": 1}, asynq.TaskID(id))
	require.NoError(tb, err)
	return id
}

// A task enqueued by another process (its own Publisher and Wake) starts
// an idle worker at once through the queue's Bell; without one the worker
// would wait for its check (an hour here).
func TestBellStartsIdleWorkerOfAnotherProcess(t *testing.T) {
	t.Parallel()
	w := newBellWorld(t)
	id := w.enqueue(t)
	select {
	case got := <-w.started:
		require.Equal(t, id, got)
	case <-time.After(30 * time.Second):
		t.Fatal("the bell did not start the idle worker")
	}
}

// BenchmarkBellWake: from EnqueueTask in one "process" (its own client and
// Bell) to the handler's start in an idle worker of another, whose check
// interval (an hour) never runs: what the Bell costs a cross-process task.
//
//	go test -run '^$' -bench BenchmarkBellWake -benchtime 200x ./adapters/asynq/queue/
func BenchmarkBellWake(b *testing.B) {
	w := newBellWorld(b)
	for b.Loop() {
		b.StopTimer()
		time.Sleep(DefaultBellCooldown) // a rate below the cooldown: every task is idle-started
		b.StartTimer()
		id := w.enqueue(b)
		for got := <-w.started; got != id; got = <-w.started {
		}
	}
}
