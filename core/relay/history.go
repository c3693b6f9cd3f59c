package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/july/template/core/ports"
)

// History keeps the queue from outliving the database's history. The
// queue holds tasks, and completed tasks for a day, of events and effects
// a point-in-time restore of Postgres takes back: a completed task would
// absorb the restored event's publish (same task id) and count as its
// consumption, so the effect would never be applied again; a pending one
// would apply an effect for an event Postgres no longer has. So each
// check compares the database's position with the one the queue last saw
// and, when the database is not that history carried on (a new timeline,
// another cluster, a log set back), has the queue forget its tasks: the
// relays publish the pending events again and the reconciler the
// delivered, unconsumed ones, from Postgres.
//
// A promotion also starts a timeline, so a failover costs one forget:
// tasks that were waiting are published again and run once more, which
// consumers already allow (at-least-once). A restore of the same
// timeline to a point after the last check (a disk snapshot of the last
// few seconds) is not seen.
type History struct {
	db    ports.DBHistory
	queue ports.QueueHistory
	log   *slog.Logger
}

// NewHistory returns a History; log may be nil.
func NewHistory(db ports.DBHistory, queue ports.QueueHistory, log *slog.Logger) (*History, error) {
	if db == nil || queue == nil {
		return nil, errors.New("relay: NewHistory needs the database's and the queue's history ports")
	}
	if log == nil {
		log = slog.Default()
	}
	return &History{db: db, queue: queue, log: log.With("component", "outbox-history")}, nil
}

// Check compares and records the positions, and reports whether the queue
// forgot its tasks. The queue is read first: a position recorded after
// the database moved on is never newer than the database.
func (h *History) Check(ctx context.Context) (bool, error) {
	seen, ok, err := h.queue.SeenPosition(ctx)
	if err != nil {
		return false, fmt.Errorf("read the database position the queue last saw: %w", err)
	}
	now, err := h.db.Position(ctx)
	if err != nil {
		return false, fmt.Errorf("read the database's position: %w", err)
	}
	forgot := false
	if ok && !now.After(seen) {
		n, err := h.queue.Forget(ctx)
		if err != nil {
			return false, fmt.Errorf("the database was restored or promoted (position %+v, the queue saw %+v), and the queue's tasks could not be deleted: %w", now, seen, err)
		}
		h.log.Warn("the database was restored or promoted: deleted the queue's tasks, which describe a history it no longer has; its pending and unconsumed events are published again",
			"deleted", n, "system", now.System, "timeline", now.Timeline, "lsn", now.LSN, "seen_system", seen.System, "seen_timeline", seen.Timeline, "seen_lsn", seen.LSN)
		forgot = true
	}
	if err := h.queue.RecordPosition(ctx, now); err != nil {
		return forgot, fmt.Errorf("record the database's position in the queue: %w", err)
	}
	return forgot, nil
}
