package ports

import (
	"context"
	"time"
)

// WindowCounter counts events per key in fixed windows, e.g. rejected
// requests per caller per minute. Implementations must be safe for
// concurrent use by several replicas.
type WindowCounter interface {
	// Add adds delta (0 reads) to key's counter, which starts at the first
	// Add of a window and expires window later. It returns the count and
	// how long until the window ends. An unreachable backend returns an
	// error wrapping ErrUnavailable and changes nothing.
	Add(ctx context.Context, key string, delta int64, window time.Duration) (n int64, resetIn time.Duration, err error)
}
