package queue

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hibiken/asynq"
)

// Consumer handles one event type on the worker. Services contribute
// Consumers to the fx group "asynq.consumers" (see AsConsumer).
type Consumer struct {
	// EventType is the task type handled, e.g. "order.created". It must
	// match exactly; asynq's prefix matching is not used.
	EventType string
	// Handler processes the task, typically built with Handle.
	Handler asynq.Handler
	// Raw skips EnvelopeMiddleware, for tasks enqueued with EnqueueTask
	// whose payload is the bare struct (see HandleTask).
	Raw bool
	// Name names the consumer in its consumption records (WithEvidence);
	// default: EventType.
	Name string
}

// MuxOption adds behaviour to NewMux's envelope consumers.
type MuxOption func(*muxOptions)

type muxOptions struct {
	ev  *Evidence
	now func() time.Time
}

// WithEvidence records every envelope task a consumer finished through
// ev (EvidenceMiddleware), stamped by now (nil: time.Now).
func WithEvidence(ev *Evidence, now func() time.Time) MuxOption {
	return func(o *muxOptions) {
		o.ev, o.now = ev, now
		if o.now == nil {
			o.now = time.Now
		}
	}
}

// NewMux returns a ServeMux routing each consumer's event type to its
// handler, behind EnvelopeMiddleware(logger) unless the consumer is Raw
// (and EvidenceMiddleware with WithEvidence).
// It returns an error for a blank event type, a nil handler or an event
// type registered twice.
func NewMux(logger *slog.Logger, consumers []Consumer, opts ...MuxOption) (*asynq.ServeMux, error) {
	var o muxOptions
	for _, opt := range opts {
		opt(&o)
	}
	mux := asynq.NewServeMux()
	envelope := EnvelopeMiddleware(logger)
	seen := make(map[string]bool, len(consumers))
	for i, c := range consumers {
		switch {
		case strings.TrimSpace(c.EventType) == "":
			return nil, fmt.Errorf("asynq queue: consumer %d has an empty event type", i)
		case c.Handler == nil:
			return nil, fmt.Errorf("asynq queue: consumer for %s has a nil handler", c.EventType)
		case seen[c.EventType]:
			return nil, fmt.Errorf("asynq queue: two consumers for event type %s; register one handler per type and fan out inside it", c.EventType)
		}
		seen[c.EventType] = true
		h := c.Handler
		if !c.Raw {
			if o.ev != nil {
				h = EvidenceMiddleware(o.ev, cmp.Or(c.Name, c.EventType), o.now)(h)
			}
			h = envelope(h)
		}
		mux.Handle(c.EventType, exactly(c.EventType, h))
	}
	return mux, nil
}

// exactly guards against asynq's longest-prefix routing ("order" would
// otherwise receive "order.created"). The mismatch is retried like
// asynq's own handler-not-found, since a newer worker may know the type.
func exactly(eventType string, h asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
		if task.Type() != eventType {
			return fmt.Errorf("asynq queue: no consumer for task type %s", task.Type())
		}
		return h.ProcessTask(ctx, task)
	})
}
