package queue_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/hibiken/asynq"
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
				enq, err := queue.NewEnqueuer(c, queue.Config{Queue: h.queue})
				require.NoError(t, err)
				return enq, func() {}
			},
		}
	})
}
