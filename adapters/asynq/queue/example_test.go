package queue_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"
	"go.uber.org/fx"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/core/outbox"
)

// Pre-encoded JSON is refused before anything reaches Redis: marshalling it
// again would ship a Base64 string.
func ExamplePublisher_EnqueueTask() {
	client := asynq.NewClient(asynq.RedisClientOpt{Addr: "127.0.0.1:6379"})
	defer client.Close()
	enq, _ := queue.NewPublisher(client, queue.Config{})

	_, err := enq.EnqueueTask(context.Background(), "order.placed", []byte(`{"order_id":"o1"}`))
	var pe *queue.PayloadError
	fmt.Println(errors.As(err, &pe), errors.Is(err, outbox.ErrPayloadNotStructured))
	// Output: true true
}

type orderShipped struct {
	OrderID string `json:"order_id"`
}

// A service adds an event consumer with one fx line.
func ExampleAsConsumer() {
	newOrderShipped := func() queue.Consumer {
		return queue.Consumer{
			EventType: "order.shipped",
			Handler: queue.Handle(func(ctx context.Context, env outbox.Envelope, p orderShipped) error {
				queue.LoggerFrom(ctx).InfoContext(ctx, "order shipped", "order_id", p.OrderID)
				return nil
			}),
		}
	}
	_ = fx.Options(
		fx.Supply(queue.ModuleConfig{RedisURL: "redis://127.0.0.1:6379/0"}),
		queue.Module,
		fx.Provide(queue.AsConsumer(newOrderShipped)),
		queue.RunWorker,
	)
}
