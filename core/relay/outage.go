package relay

import (
	"log/slog"
	"sync"
	"time"
)

// DefaultOutageLogEvery is the default value of Config.OutageLogEvery.
const DefaultOutageLogEvery = time.Minute

// outageLog turns a queue outage into two WARN lines, one when publishes
// start failing with ports.ErrUnavailable and one when a publish works
// again, with counts. During the outage the loops cycle rows through
// failures without another line; the metrics carry the detail. A start
// line is written at most once per every: a flap soon after the last
// logged outage is counted and reported with the next start line instead.
// All loops share one outageLog.
type outageLog struct {
	every time.Duration

	mu       sync.Mutex
	active   bool
	logged   bool      // the current outage's start line was written
	since    time.Time // first failure of the current outage
	attempts int       // failed publish attempts in the current outage
	lastLine time.Time // when a start line was last written

	unlogged, unloggedAttempts int // outages since lastLine that were not logged
}

// observe records one batch: unavailable envelopes failed because the
// queue is unreachable, published ones were enqueued.
func (o *outageLog) observe(log *slog.Logger, now time.Time, unavailable, published int) {
	if unavailable == 0 && published == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case unavailable > 0 && !o.active:
		o.active, o.since, o.attempts = true, now, unavailable
		o.logged = o.lastLine.IsZero() || now.Sub(o.lastLine) >= o.every
		if !o.logged {
			return
		}
		o.lastLine = now
		log.Warn("task queue unavailable; outbox events back off and are retried until it returns",
			"failed_attempts", unavailable, "unlogged_outages", o.unlogged, "unlogged_failed_attempts", o.unloggedAttempts)
		o.unlogged, o.unloggedAttempts = 0, 0
	case unavailable > 0:
		o.attempts += unavailable
	case o.active: // published, nothing unavailable: the outage is over
		o.active = false
		if !o.logged {
			o.unlogged++
			o.unloggedAttempts += o.attempts
			return
		}
		log.Warn("task queue reachable again; outbox delivery resumed",
			"duration", now.Sub(o.since).String(), "failed_attempts", o.attempts, "delivered", published)
	}
}
