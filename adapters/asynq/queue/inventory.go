package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/july/template/core/ports"
)

// Inventory is ports.QueueInventory on one asynq queue. It reads the state
// field of each task's hash (asynq:{queue}:t:<id>) in one pipeline, which
// is asynq's storage layout, not its API: TestInventoryStates holds it to
// every state on the pinned asynq version.
type Inventory struct {
	client redis.UniversalClient
	queue  string
}

var _ ports.QueueInventory = (*Inventory)(nil)

// NewInventory returns an Inventory of queue over a client of opt, closed
// by Close.
func NewInventory(opt asynq.RedisConnOpt, queue string) (*Inventory, error) {
	c, ok := opt.MakeRedisClient().(redis.UniversalClient)
	if !ok || queue == "" {
		return nil, errors.New("asynq queue: NewInventory needs a go-redis connection option and a queue name")
	}
	return &Inventory{client: c, queue: queue}, nil
}

// Close closes the Redis client.
func (i *Inventory) Close() error { return i.client.Close() }

// TaskStates implements ports.QueueInventory.
func (i *Inventory) TaskStates(ctx context.Context, eventIDs []string) ([]ports.QueueState, error) {
	if len(eventIDs) == 0 {
		return nil, nil
	}
	cmds := make([]*redis.StringCmd, len(eventIDs))
	_, err := i.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for n, id := range eventIDs {
			cmds[n] = p.HGet(ctx, "asynq:{"+i.queue+"}:t:"+id, "state")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable(fmt.Sprintf("read the state of %d tasks", len(eventIDs)), err)
	}
	out := make([]ports.QueueState, len(eventIDs))
	for n, c := range cmds {
		s, err := c.Result()
		switch {
		case errors.Is(err, redis.Nil):
			out[n] = ports.QueueMissing
		case err != nil:
			return nil, unavailable("read the state of task "+eventIDs[n], err)
		default:
			out[n] = ports.QueueState(s)
		}
	}
	return out, nil
}
