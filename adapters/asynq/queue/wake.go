package queue

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// Wake tells a worker in this process that its queue has work. A Publisher
// whose Config.Wake is set signals it after every task it enqueues; the
// server whose ServerConfig.Wake is the same Wake, when it found its queues
// empty, dequeues at once instead of at its next check. Module shares one
// between its Publisher and its worker. The zero value is not usable; a
// nil *Wake ignores Signal.
//
// asynq's processor sleeps uninterruptibly after an empty dequeue, so the
// server waits here instead: NewServer installs a hook on asynq's Redis
// client that holds the dequeue of an idle worker until a Signal or
// ServerConfig.TaskCheckInterval, and gives asynq a 1 ms sleep of its own.
// An idle worker thus costs one dequeue script per queue per check, as
// before, and a signalled task starts within a Redis round trip.
type Wake struct {
	ch     chan struct{}
	closed chan struct{}
	once   sync.Once
}

// NewWake returns a Wake for one server.
func NewWake() *Wake { return &Wake{ch: make(chan struct{}, 1), closed: make(chan struct{})} }

// Signal wakes the server if it is waiting, or makes its next wait return
// at once. It never blocks.
func (w *Wake) Signal() {
	if w == nil {
		return
	}
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// Close ends the server's waits for good; call it just before the
// server's Shutdown, which otherwise waits for an idle worker's check (up
// to 1.5 x TaskCheckInterval, as asynq's own sleep did). After Close an
// idle worker polls every millisecond or so until it is shut down.
func (w *Wake) Close() {
	if w != nil {
		w.once.Do(func() { close(w.closed) })
	}
}

// wait returns after a Signal, Close or d.
func (w *Wake) wait(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.ch:
	case <-w.closed:
	case <-t.C:
	}
}

// asynqIdleSleep is the TaskCheckInterval NewServer gives asynq: its sleep
// after an empty dequeue (x0.5..x1.5) is the one span a Signal cannot cut.
const asynqIdleSleep = time.Millisecond

// idleHook holds asynq's dequeue while the worker is idle. asynq's Dequeue
// runs its dequeue script once per queue, in a shuffled order, and stops at
// the first task; when a queue comes round again with no task found since
// it was last tried, every queue was empty, so that dequeue first waits for
// a Signal or the check interval (jittered x0.5..x1.5).
type idleHook struct {
	wake  *Wake
	check time.Duration

	mu    sync.Mutex      // only asynq's processor goroutine dequeues; cheap
	tried map[string]bool // queues found empty since the last task
	waits atomic.Int64    // idle waits begun, for the tests
}

func (h *idleHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *idleHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *idleHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		q, ok := dequeued(cmd.Args())
		if !ok {
			return next(ctx, cmd)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.tried[q] {
			clear(h.tried)
			h.waits.Add(1)
			h.wake.wait(time.Duration(float64(h.check) * (0.5 + rand.Float64())))
		}
		err := next(ctx, cmd)
		switch {
		case errors.Is(err, redis.Nil):
			if h.tried == nil {
				h.tried = map[string]bool{}
			}
			h.tried[q] = true
		default:
			clear(h.tried)
		}
		return err
	}
}

// dequeued recognises asynq's dequeue script by its keys, exactly four,
// asynq:{q}:pending then asynq:{q}:paused (asynq v0.26 internal/rdb;
// TestWakeStartsIdleWorker fails when that changes), and returns q's
// pending key.
func dequeued(args []any) (string, bool) {
	if len(args) < 7 {
		return "", false
	}
	if name, _ := args[0].(string); name != "evalsha" && name != "eval" {
		return "", false
	}
	if n, _ := args[2].(int); n != 4 {
		return "", false
	}
	pending, _ := args[3].(string)
	paused, _ := args[4].(string)
	ok := strings.HasPrefix(pending, "asynq:{") && strings.HasSuffix(pending, "}:pending") && strings.HasSuffix(paused, "}:paused")
	return pending, ok
}

// hookedConnOpt adds a hook to the Redis client asynq makes from opt.
type hookedConnOpt struct {
	asynq.RedisConnOpt
	hook redis.Hook
}

func (o hookedConnOpt) MakeRedisClient() any {
	c := o.RedisConnOpt.MakeRedisClient()
	if u, ok := c.(redis.UniversalClient); ok {
		u.AddHook(o.hook)
	}
	return c
}
