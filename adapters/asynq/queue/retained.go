package queue

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/hibiken/asynq"

	"github.com/july/template/core/ports"
)

// Retained is ports.RetainedTasks on asynq's inspector: it deletes the
// completed, archived, pending or retrying task whose id is an event_id,
// so the relay's next publish of that event is enqueued, not absorbed.
type Retained struct {
	ins   *asynq.Inspector
	queue string
}

var _ ports.RetainedTasks = (*Retained)(nil)

// NewRetained returns a Retained for queue, using ins, which the caller
// owns and closes.
func NewRetained(ins *asynq.Inspector, queue string) (*Retained, error) {
	if ins == nil || strings.TrimSpace(queue) == "" {
		return nil, errors.New("asynq queue: NewRetained needs an inspector and a queue name")
	}
	return &Retained{ins: ins, queue: queue}, nil
}

// Delete implements ports.RetainedTasks. A missing task or queue is fine.
func (r *Retained) Delete(ctx context.Context, eventIDs []string) (int, error) {
	n := 0
	for _, id := range eventIDs {
		if err := ctx.Err(); err != nil {
			return n, unavailable("delete retained task "+id, err)
		}
		err := r.ins.DeleteTask(r.queue, id)
		var (
			ne net.Error
			oe *net.OpError
		)
		switch {
		case err == nil:
			n++
		case errors.Is(err, asynq.ErrTaskNotFound), errors.Is(err, asynq.ErrQueueNotFound):
		case errors.As(err, &oe), errors.As(err, &ne):
			return n, unavailable("delete retained task "+id, err)
		case strings.Contains(err.Error(), "active"):
			return n, fmt.Errorf("asynq queue: delete task %s in queue %s: %w", id, r.queue, ports.ErrTaskActive)
		default:
			return n, unavailable("delete retained task "+id, err)
		}
	}
	return n, nil
}
