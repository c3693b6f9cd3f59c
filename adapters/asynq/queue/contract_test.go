package queue_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/contracttests"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

func TestPublisherContract(t *testing.T) {
	t.Parallel()

	contracttests.RunPublisher(t, func(t *testing.T) contracttests.PublisherFixture {
		h := newHarness(t)
		return contracttests.PublisherFixture{
			Publisher: h.enq,
			Tasks: func(t *testing.T) []outbox.Envelope {
				tasks, err := h.insp.ListPendingTasks(h.queue, asynq.PageSize(1000))
				if errors.Is(err, asynq.ErrQueueNotFound) {
					return nil
				}
				require.NoError(t, err)
				var out []outbox.Envelope
				for _, task := range tasks {
					var env outbox.Envelope
					require.NoError(t, json.Unmarshal(task.Payload, &env), "task %s payload", task.ID)
					require.Equal(t, task.ID, env.EventID, "asynq task id must be the event_id")
					out = append(out, env)
				}
				return out
			},
			Outage: func(t *testing.T, _ ports.Publisher) (ports.Publisher, func()) {
				opt, err := asynq.ParseRedisURI("redis://127.0.0.1:1/0")
				require.NoError(t, err)
				c := asynq.NewClient(opt)
				t.Cleanup(func() { _ = c.Close() })
				enq, err := queue.NewPublisher(c, queue.Config{Queue: h.queue})
				require.NoError(t, err)
				return enq, func() {}
			},
		}
	})
}

func TestRetainedTasksContract(t *testing.T) {
	t.Parallel()

	contracttests.RunRetainedTasks(t, func(t *testing.T) contracttests.RetainedTasksFixture {
		h := newHarness(t)
		tasks, err := queue.NewRetained(h.insp, h.queue)
		require.NoError(t, err)
		return contracttests.RetainedTasksFixture{
			Tasks:     tasks,
			Publisher: h.enq,
			Held: func(t *testing.T) []string {
				pending, err := h.insp.ListPendingTasks(h.queue, asynq.PageSize(1000))
				if errors.Is(err, asynq.ErrQueueNotFound) {
					return nil
				}
				require.NoError(t, err)
				var ids []string
				for _, task := range pending {
					ids = append(ids, task.ID)
				}
				return ids
			},
			Outage: func(t *testing.T, _ ports.RetainedTasks) (ports.RetainedTasks, func()) {
				opt, err := asynq.ParseRedisURI("redis://127.0.0.1:1/0")
				require.NoError(t, err)
				ins := asynq.NewInspector(opt)
				t.Cleanup(func() { _ = ins.Close() })
				down, err := queue.NewRetained(ins, h.queue)
				require.NoError(t, err)
				return down, func() {}
			},
		}
	})
}

func TestQueueInventoryContract(t *testing.T) {
	t.Parallel()

	contracttests.RunQueueInventory(t, func(t *testing.T) contracttests.QueueInventoryFixture {
		h := newHarness(t)
		inv, err := queue.NewInventory(h.opt, h.queue)
		require.NoError(t, err)
		t.Cleanup(func() { _ = inv.Close() })
		raw := func(t *testing.T, args ...any) {
			t.Helper()
			c := h.opt.MakeRedisClient().(redis.UniversalClient)
			defer c.Close()
			require.NoError(t, c.Do(t.Context(), args...).Err())
		}
		return contracttests.QueueInventoryFixture{
			Inventory: inv,
			Publisher: h.enq,
			Archive: func(t *testing.T, id string) {
				require.NoError(t, h.insp.ArchiveTask(h.queue, id))
			},
			LoseAll: func(t *testing.T) { // what a flush of the queue's keys leaves: nothing
				c := h.opt.MakeRedisClient().(redis.UniversalClient)
				defer c.Close()
				keys, err := c.Keys(t.Context(), "asynq:{"+h.queue+"}:*").Result()
				require.NoError(t, err)
				if len(keys) > 0 {
					require.NoError(t, c.Del(t.Context(), keys...).Err())
				}
			},
			LoseList: func(t *testing.T) { raw(t, "DEL", "asynq:{"+h.queue+"}:pending") }, // an evicted key
			Outage: func(t *testing.T, _ ports.QueueInventory) (ports.QueueInventory, func()) {
				opt, err := asynq.ParseRedisURI("redis://127.0.0.1:1/0")
				require.NoError(t, err)
				down, err := queue.NewInventory(opt, h.queue)
				require.NoError(t, err)
				t.Cleanup(func() { _ = down.Close() })
				return down, func() {}
			},
		}
	})
}
