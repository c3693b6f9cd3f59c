package redis

import (
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/july/template/core/ports"
)

// translate maps a rueidis error to the port errors: a nil reply is
// ports.ErrNotFound, everything else (refused connection, timeout, a
// server error) wraps ports.ErrUnavailable. Every call passes its error
// through here exactly once.
func translate(err error) error {
	switch {
	case err == nil:
		return nil
	case rueidis.IsRedisNil(err):
		return ports.ErrNotFound
	default:
		return fmt.Errorf("%w: %w", ports.ErrUnavailable, err)
	}
}

// milliseconds converts a positive ttl to whole milliseconds, rounding up
// so a sub-millisecond ttl never becomes PX 0 (which Redis refuses).
func milliseconds(what string, ttl time.Duration) (int64, error) {
	if ttl <= 0 {
		return 0, fmt.Errorf("%s: ttl %s must be positive", what, ttl)
	}
	return int64((ttl + time.Millisecond - 1) / time.Millisecond), nil
}
