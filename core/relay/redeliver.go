package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/july/template/core/outbox"
	"github.com/july/template/core/ports"
)

// DefaultRedeliverWindow is how far back Redeliver reaches after a queue
// failover: Sentinel's detection and promotion time for an unplanned
// failover (down-after plus the election), with margin.
const DefaultRedeliverWindow = time.Minute

// redeliverPage is the rows read and published per round.
const redeliverPage = 500

// Redeliver publishes again every event delivered since from. Redis
// replicates asynchronously, so a failover can drop tasks the old master
// acknowledged; their rows say Delivered and no one would send them
// again. Publishing the window again is safe: the queue absorbs an event
// whose task it still holds (same task id), and consumers are idempotent
// by event id for one it had already run and removed. Row states do not
// change. A publish that fails is retried up to three times, pausing on
// clock, then the error is returned with the count sent so far; call it
// again to resume.
func Redeliver(ctx context.Context, store ports.OutboxDeliveredReader, pub ports.Publisher, clock ports.Clock, from time.Time) (int, error) {
	sent := 0
	var cur ports.DeliveredCursor
	for {
		evs, err := store.DeliveredSince(ctx, from, cur, redeliverPage)
		if err != nil {
			return sent, fmt.Errorf("redeliver since %s: read the delivered events: %w", from.Format(time.RFC3339), err)
		}
		envs := make([]outbox.Envelope, len(evs))
		for i, ev := range evs {
			envs[i] = ev.Envelope()
		}
		for attempt := 1; len(envs) > 0; attempt++ {
			errs := pub.Publish(ctx, envs)
			var again []outbox.Envelope
			var last error
			for i, err := range errs {
				if err != nil {
					again, last = append(again, envs[i]), err
				}
			}
			sent += len(envs) - len(again)
			if len(again) == 0 {
				break
			}
			if attempt == 3 || ctx.Err() != nil {
				return sent, fmt.Errorf("redeliver since %s: %d events not published after %d attempts: %w",
					from.Format(time.RFC3339), len(again), attempt, errors.Join(last, ctx.Err()))
			}
			envs = again
			select {
			case <-ctx.Done():
			case <-clock.After(time.Duration(attempt) * 200 * time.Millisecond):
			}
		}
		if len(evs) < redeliverPage {
			return sent, nil
		}
		last := evs[len(evs)-1]
		cur = ports.DeliveredCursor{DeliveredAt: *last.DeliveredAt, ID: last.ID}
	}
}
