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

// A task enqueued by another process (its own Publisher and Wake) starts
// an idle worker at once through the queue's Bell; without one the worker
// would wait for its check (an hour here).
func TestBellStartsIdleWorkerOfAnotherProcess(t *testing.T) {
	t.Parallel()
	r := testinfra.NewRedis(t)
	opt, err := asynq.ParseRedisURI(r.URL)
	require.NoError(t, err)
	q := r.AsynqQueue(t, "bell")
	wake := NewWake()
	srv, hook := newServer(opt, ServerConfig{Queues: map[string]int{q: 1}, Concurrency: 1,
		ShutdownTimeout: 2 * time.Second, TaskCheckInterval: time.Hour, Wake: wake})
	started := make(chan string, 1)
	require.NoError(t, srv.Start(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		started <- id
		return nil
	})))
	t.Cleanup(func() { wake.Close(); srv.Shutdown() })
	listener, err := NewBell(opt, q)
	require.NoError(t, err)
	t.Cleanup(func() { _ = listener.Close() })
	go listener.Listen(t.Context(), wake)

	// The other process.
	client := asynq.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })
	ringer, err := NewBell(opt, q)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ringer.Close() })
	pub, err := NewPublisher(client, Config{Queue: q, Bell: ringer})
	require.NoError(t, err)

	require.Eventually(t, func() bool { return hook.waits.Load() == 1 }, 30*time.Second, 5*time.Millisecond, "the worker is idle")
	// The subscription is up once a ring reaches it.
	require.Eventually(t, func() bool {
		a, err := r.Client.Do(t.Context(), r.Client.B().PubsubNumsub().Channel(BellChannel(q)).Build()).ToArray()
		if err != nil || len(a) != 2 {
			return false
		}
		n, err := a[1].AsInt64()
		return err == nil && n == 1
	}, 30*time.Second, 5*time.Millisecond, "the listener subscribed")
	id := uuid.NewString()
	_, err = pub.EnqueueTask(t.Context(), "t", map[string]any{"n": 1}, asynq.TaskID(id))
	require.NoError(t, err)
	select {
	case got := <-started:
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
	r := testinfra.NewRedis(b)
	opt, err := asynq.ParseRedisURI(r.URL)
	require.NoError(b, err)
	q := r.AsynqQueue(b, "bellb")
	wake := NewWake()
	srv, _ := newServer(opt, ServerConfig{Queues: map[string]int{q: 1}, Concurrency: 1,
		ShutdownTimeout: 2 * time.Second, TaskCheckInterval: time.Hour, Wake: wake})
	started := make(chan struct{}, 1)
	require.NoError(b, srv.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		started <- struct{}{}
		return nil
	})))
	b.Cleanup(func() { wake.Close(); srv.Shutdown() })
	listener, err := NewBell(opt, q)
	require.NoError(b, err)
	b.Cleanup(func() { _ = listener.Close() })
	go listener.Listen(b.Context(), wake)
	client := asynq.NewClient(opt)
	b.Cleanup(func() { _ = client.Close() })
	ringer, err := NewBell(opt, q)
	require.NoError(b, err)
	b.Cleanup(func() { _ = ringer.Close() })
	pub, err := NewPublisher(client, Config{Queue: q, Bell: ringer})
	require.NoError(b, err)
	// Warm up: the subscription is live once a task goes through.
	for {
		_, err = pub.EnqueueTask(b.Context(), "t", map[string]any{"n": 0})
		require.NoError(b, err)
		select {
		case <-started:
		case <-time.After(time.Second):
			continue
		}
		break
	}
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		time.Sleep(DefaultBellCooldown) // a rate below the cooldown: every task is idle-started
		b.StartTimer()
		_, err = pub.EnqueueTask(b.Context(), "t", map[string]any{"n": 1})
		require.NoError(b, err)
		<-started
	}
}
