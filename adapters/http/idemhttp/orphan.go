package idemhttp

import (
	"context"
	"log/slog"
	"time"

	"github.com/july/template/adapters/http/httpx"
)

// maxOrphans bounds the guards released in the background at once; beyond
// it a guard is left to expire (its TTL), as before.
const maxOrphans = 256

// orphanRetry is the first pause between two release attempts; it
// doubles up to orphanRetryMax.
const (
	orphanRetry    = 50 * time.Millisecond
	orphanRetryMax = time.Second
)

// orphans releases guards whose Acquire failed: the SET may have reached
// Redis and run after the client gave up, leaving a guard nobody knows it
// holds. Release is owner-checked, so a guard another request took since
// is never freed.
type orphans struct {
	slots chan struct{}
}

// release tries to release name for owner, in the background, until a
// release frees it or the guard's TTL has passed. A release that finds
// nothing does not end it: the timed-out SET may be queued on another of
// the client's pipelined connections and land after it.
func (o *orphans) release(ctx context.Context, cfg *Config, name, owner string) {
	select {
	case o.slots <- struct{}{}:
	default:
		return
	}
	ctx = context.WithoutCancel(ctx)
	deadline := time.Now().Add(cfg.GuardTTL)
	go func() {
		defer func() { <-o.slots }()
		pause := orphanRetry
		for {
			freed, err := cfg.Guard.Release(ctx, name, owner)
			if freed {
				return
			}
			if !time.Now().Before(deadline) {
				if err != nil {
					httpx.Logger(ctx, cfg.Logger).WarnContext(ctx, "idempotency guard not released; it expires by itself",
						slog.String("guard", name), slog.Any("error", err))
				}
				return
			}
			time.Sleep(pause)
			pause = min(2*pause, orphanRetryMax)
		}
	}()
}
