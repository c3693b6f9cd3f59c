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

// orphanRetry is the pause between two release attempts.
const orphanRetry = 250 * time.Millisecond

// orphans releases guards whose Acquire failed: the SET may have reached
// Redis and run after the client gave up, leaving a guard nobody knows it
// holds. Release is owner-checked, so a guard another request took since
// is never freed.
type orphans struct {
	slots chan struct{}
}

// release tries to release name for owner until Redis answers or the
// guard's TTL has passed, in the background.
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
		for {
			_, err := cfg.Guard.Release(ctx, name, owner)
			if err == nil || !time.Now().Before(deadline) {
				if err != nil {
					httpx.Logger(ctx, cfg.Logger).WarnContext(ctx, "idempotency guard not released; it expires by itself",
						slog.String("guard", name), slog.Any("error", err))
				}
				return
			}
			time.Sleep(orphanRetry)
		}
	}()
}
