package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/july/template/adapters/asynq/queue"
	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

func TestModuleWiresPublisherAndConsumerGroup(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	got := make(chan orderPlaced, 1)
	newConsumer := func() queue.Consumer {
		return queue.Consumer{EventType: "order.placed", Handler: queue.Handle(
			func(_ context.Context, _ outbox.Envelope, p orderPlaced) error { got <- p; return nil })}
	}
	var (
		pub ports.Publisher
		enq *queue.Publisher
	)
	app := fxtest.New(t,
		fx.NopLogger,
		fx.Supply(queue.ModuleConfig{
			RedisURL:  h.url,
			Publisher: queue.Config{Queue: h.queue},
			Server:    queue.ServerConfig{Concurrency: 2, Logger: discardLogger(), ShutdownTimeout: 2 * time.Second},
		}),
		queue.Module,
		fx.Provide(queue.AsConsumer(newConsumer)),
		queue.RunWorker,
		fx.Populate(&pub, &enq),
	)
	app.RequireStart()
	t.Cleanup(app.RequireStop) // before the harness deletes the queue

	require.Same(t, enq, pub.(*queue.Publisher), "Publisher is the Publisher")
	env := envelope(t, "order.placed", orderPlaced{OrderID: "o1", Amount: 3})
	require.Equal(t, []error{nil}, pub.Publish(context.Background(), []outbox.Envelope{env}))
	select {
	case p := <-got:
		require.Equal(t, orderPlaced{OrderID: "o1", Amount: 3}, p)
	case <-time.After(15 * time.Second):
		t.Fatal("consumer from the fx group never called")
	}
}

func TestModuleRejectsBadConfig(t *testing.T) {
	t.Parallel()
	dup := func() queue.Consumer {
		return queue.Consumer{EventType: "a.b", Handler: queue.Handle(func(context.Context, outbox.Envelope, orderPlaced) error { return nil })}
	}
	tests := []struct {
		name string
		want string
		opts []fx.Option
	}{
		{"bad redis url", "not a valid Redis URL", []fx.Option{fx.Supply(queue.ModuleConfig{RedisURL: "http://user:hunter2@host"}), fx.Invoke(func(ports.Publisher) {})}},
		{"duplicate consumers", "two consumers for event type a.b", []fx.Option{
			fx.Supply(queue.ModuleConfig{RedisURL: "redis://127.0.0.1:1/0"}),
			fx.Provide(queue.AsConsumer(dup), queue.AsConsumer(dup)), queue.RunWorker,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := fx.New(append([]fx.Option{fx.NopLogger, queue.Module}, tt.opts...)...).Err()
			require.ErrorContains(t, err, tt.want, "case %s", tt.name)
			require.NotContains(t, err.Error(), "hunter2", "the Redis password must not leak")
		})
	}
}

// REGRESSION (issue 44): an idle worker slept its whole check interval
// (asynq's 1 s, jittered x0.5..x1.5) after finding its queue empty, so at
// low rates every task the relay delivered waited for the next poll.
// Module's Publisher now wakes its worker: even with an hour-long check,
// each of three tasks published one after another, the worker idle in
// between, starts long before the first check could come.
func TestModuleWorkerStartsPublishedTasksWithoutWaitingForItsCheck(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	got := make(chan orderPlaced, 1)
	newConsumer := func() queue.Consumer {
		return queue.Consumer{EventType: "order.placed", Handler: queue.Handle(
			func(_ context.Context, _ outbox.Envelope, p orderPlaced) error { got <- p; return nil })}
	}
	var pub ports.Publisher
	app := fxtest.New(t,
		fx.NopLogger,
		fx.Supply(queue.ModuleConfig{
			RedisURL:  h.url,
			Publisher: queue.Config{Queue: h.queue},
			Server: queue.ServerConfig{Concurrency: 2, Logger: discardLogger(), ShutdownTimeout: 2 * time.Second,
				TaskCheckInterval: time.Hour},
		}),
		queue.Module,
		fx.Provide(queue.AsConsumer(newConsumer)),
		queue.RunWorker,
		fx.Populate(&pub),
	)
	app.RequireStart()
	t.Cleanup(app.RequireStop) // before the harness deletes the queue

	for i := range 3 {
		want := orderPlaced{OrderID: fmt.Sprintf("o%d", i), Amount: i + 1}
		require.Equal(t, []error{nil}, pub.Publish(context.Background(), []outbox.Envelope{envelope(t, "order.placed", want)}))
		select {
		case p := <-got:
			require.Equal(t, want, p)
		case <-time.After(30 * time.Second): // the check would come after 30 minutes at the earliest
			t.Fatalf("task %d not started: the idle worker waited for its check instead of the Publisher's wake", i)
		}
	}
}
