package ports

import (
	"context"
	"time"
)

// DeliveredCursor is where a page of delivered events ended: the last
// event's delivered_at and id. The zero value starts at the beginning.
type DeliveredCursor struct {
	DeliveredAt time.Time
	ID          int64
}

// MasterSwitchWatcher tells the relay that the task queue's Redis failed
// over to a new master (Sentinel's +switch-master): Redis replicates
// asynchronously, so the old master may have dropped tasks it had
// acknowledged. The relay turns each switch into a LossSignal.
type MasterSwitchWatcher interface {
	// WatchMasterSwitch calls onSwitch with the new master's address
	// ("host:port") each time the queue's master is switched, one call at
	// a time, until ctx ends; then it returns. It reconnects by itself
	// when its connection to the announcer drops; a switch announced while
	// it is disconnected is missed (the reconciler's periodic pass and the
	// run_id check still see it). onSwitch should return quickly.
	WatchMasterSwitch(ctx context.Context, onSwitch func(newMaster string))
}
