package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/july/template/core/ports"
)

// History is ports.QueueHistory on one asynq queue: the database position
// it last saw is a key beside the queue's own (same hash tag, so it lives
// and is lost with them), and Forget empties the queue through asynq's
// inspector.
type History struct {
	client redis.UniversalClient
	ins    *asynq.Inspector
	queue  string
	key    string
}

var _ ports.QueueHistory = (*History)(nil)

// NewHistory returns a History of queue over a client of opt (closed by
// Close) and ins, which the caller owns.
func NewHistory(opt asynq.RedisConnOpt, ins *asynq.Inspector, queue string) (*History, error) {
	c, ok := opt.MakeRedisClient().(redis.UniversalClient)
	if !ok || ins == nil || strings.TrimSpace(queue) == "" {
		return nil, errors.New("asynq queue: NewHistory needs a go-redis connection option, an inspector and a queue name")
	}
	return &History{client: c, ins: ins, queue: queue, key: "asynq:{" + queue + "}:july:db_position"}, nil
}

// Close closes the Redis client.
func (h *History) Close() error { return h.client.Close() }

// SeenPosition implements ports.QueueHistory.
func (h *History) SeenPosition(ctx context.Context) (ports.DBPosition, bool, error) {
	v, err := h.client.Get(ctx, h.key).Result()
	if errors.Is(err, redis.Nil) {
		return ports.DBPosition{}, false, nil
	}
	if err != nil {
		return ports.DBPosition{}, false, unavailable("read the database position the queue saw", err)
	}
	f := strings.Fields(v)
	if len(f) != 3 {
		return ports.DBPosition{}, false, fmt.Errorf("asynq queue: key %s holds %q, not \"system timeline lsn\"; delete it", h.key, v)
	}
	tl, err1 := strconv.ParseUint(f[1], 10, 32)
	lsn, err2 := strconv.ParseUint(f[2], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return ports.DBPosition{}, false, fmt.Errorf("asynq queue: key %s holds %q, not \"system timeline lsn\" (%w); delete it", h.key, v, err)
	}
	return ports.DBPosition{System: f[0], Timeline: uint32(tl), LSN: lsn}, true, nil
}

// RecordPosition implements ports.QueueHistory.
func (h *History) RecordPosition(ctx context.Context, p ports.DBPosition) error {
	v := p.System + " " + strconv.FormatUint(uint64(p.Timeline), 10) + " " + strconv.FormatUint(p.LSN, 10)
	if err := h.client.Set(ctx, h.key, v, 0).Err(); err != nil {
		return unavailable("record the database position", err)
	}
	return nil
}

// Forget implements ports.QueueHistory: it deletes the queue's pending,
// scheduled, retrying, archived and completed tasks. A running task
// finishes (asynq cannot take it back).
func (h *History) Forget(ctx context.Context) (int, error) {
	qs, err := h.ins.Queues()
	if err != nil {
		return 0, unavailable("list the queues", err)
	}
	if !slices.Contains(qs, h.queue) {
		return 0, nil
	}
	n := 0
	for _, del := range []func(string) (int, error){h.ins.DeleteAllPendingTasks, h.ins.DeleteAllScheduledTasks,
		h.ins.DeleteAllRetryTasks, h.ins.DeleteAllArchivedTasks, h.ins.DeleteAllCompletedTasks} {
		if err := ctx.Err(); err != nil {
			return n, unavailable("delete the queue's tasks", err)
		}
		d, err := del(h.queue)
		n += d
		if err != nil {
			return n, unavailable("delete the queue's tasks", err)
		}
	}
	return n, nil
}
