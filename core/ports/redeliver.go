package ports

import (
	"context"
	"time"

	"github.com/july/template/core/outbox"
)

// DeliveredCursor is where a DeliveredSince page ended: the last event's
// delivered_at and id. The zero value starts at the window's beginning.
type DeliveredCursor struct {
	DeliveredAt time.Time
	ID          int64
}

// OutboxDeliveredReader reads recently delivered events, for a relay that
// must publish them again because the queue may have lost them (a Redis
// failover that dropped acknowledged writes).
type OutboxDeliveredReader interface {
	// DeliveredSince returns up to limit (1..500) Delivered events with
	// delivered_at >= from, after the cursor, ordered by (delivered_at,
	// id); fewer than limit means the window is exhausted.
	DeliveredSince(ctx context.Context, from time.Time, after DeliveredCursor, limit int) ([]outbox.Event, error)
}

// MasterSwitchWatcher tells the relay that the task queue's Redis failed
// over to a new master (Sentinel's +switch-master): Redis replicates
// asynchronously, so the old master may have dropped tasks it had
// acknowledged.
type MasterSwitchWatcher interface {
	// WatchMasterSwitch calls onSwitch with the new master's address
	// ("host:port") each time the queue's master is switched, one call at
	// a time, until ctx ends; then it returns. It reconnects by itself
	// when its connection to the announcer drops; a switch announced while
	// it is disconnected is missed, so a caller's window should cover the
	// reconnect delay. onSwitch should return quickly.
	WatchMasterSwitch(ctx context.Context, onSwitch func(newMaster string))
}
