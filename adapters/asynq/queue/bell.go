package queue

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// DefaultBellCooldown is the shortest gap between two rings a Bell sends:
// under load a ring per batch would be a Redis command per batch for
// workers that are busy anyway, so rings within it are sent as one.
const DefaultBellCooldown = 10 * time.Millisecond

// Bell is Wake across processes: a Publisher whose Config.Bell is set rings
// it after it enqueues (one Redis PUBLISH, rings within DefaultBellCooldown
// sent as one), and every worker listening on the same queue's bell
// (Listen) signals its Wake, so an idle worker in another process (the
// api enqueued, or another relay's worker) starts the task at once instead
// of at its next check. Idle, a Bell costs its subscription's health-check
// PING every few seconds and nothing else. A ring lost (Redis down, a
// reconnect) only delays the task to the worker's check, as before.
type Bell struct {
	client  redis.UniversalClient
	channel string
	kick    chan struct{}
	stop    context.CancelFunc
	done    sync.WaitGroup
}

// BellChannel is the Pub/Sub channel of queue's bell. The hash tag keeps
// it on the queue's slot in a cluster.
func BellChannel(queue string) string { return "asynq:{" + queue + "}:july:bell" }

// NewBell returns the Bell of queue on opt's Redis, its sender running;
// Close stops it and closes its connections.
func NewBell(opt asynq.RedisConnOpt, queue string) (*Bell, error) {
	c, ok := opt.MakeRedisClient().(redis.UniversalClient)
	if !ok {
		return nil, errors.New("asynq queue: the redis connection option makes no go-redis client")
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Bell{client: c, channel: BellChannel(queue), kick: make(chan struct{}, 1), stop: cancel}
	b.done.Go(func() { b.send(ctx) })
	return b, nil
}

// Ring asks for one ring to be sent; it never blocks. A nil *Bell ignores it.
func (b *Bell) Ring() {
	if b == nil {
		return
	}
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

func (b *Bell) send(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.kick:
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		_ = b.client.Publish(pctx, b.channel, "1").Err() // lost: the check interval still runs the task
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-time.After(DefaultBellCooldown):
		}
	}
}

// Listen signals wake on every ring of the bell until ctx ends or the Bell
// is closed. go-redis resubscribes by itself after a dropped connection.
func (b *Bell) Listen(ctx context.Context, wake *Wake) {
	ps := b.client.Subscribe(ctx, b.channel)
	defer ps.Close()
	ch := ps.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-ch:
			if !ok {
				return
			}
			wake.Signal()
		}
	}
}

// Close stops the sender and closes the Bell's Redis client (which ends
// every Listen).
func (b *Bell) Close() error {
	b.stop()
	b.done.Wait()
	return b.client.Close()
}
