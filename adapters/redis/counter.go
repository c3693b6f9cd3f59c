package redis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/july/template/core/ports"
)

// DefaultCounterPrefix starts every WindowCounter key.
const DefaultCounterPrefix = "count:"

// WindowCounter is ports.WindowCounter on Redis: one INCRBY plus PEXPIRE NX
// in a script, so the window starts at the first hit and every replica
// shares the count.
type WindowCounter struct {
	client rueidis.Client
	prefix string
}

var _ ports.WindowCounter = (*WindowCounter)(nil)

// NewWindowCounter returns a counter on client under prefix (default
// DefaultCounterPrefix).
func NewWindowCounter(client rueidis.Client, prefix string) (*WindowCounter, error) {
	if client == nil {
		return nil, errors.New("redis: NewWindowCounter needs a rueidis client")
	}
	return &WindowCounter{client: client, prefix: cmp.Or(prefix, DefaultCounterPrefix)}, nil
}

var addScript = rueidis.NewLuaScript(`
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2], 'NX')
return {n, redis.call('PTTL', KEYS[1])}
`)

// Add implements ports.WindowCounter.
func (w *WindowCounter) Add(ctx context.Context, key string, delta int64, window time.Duration) (int64, time.Duration, error) {
	ms, err := milliseconds(fmt.Sprintf("count %q", key), window)
	if err != nil {
		return 0, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	vals, err := addScript.Exec(ctx, w.client, []string{w.prefix + key}, []string{fmt.Sprint(delta), fmt.Sprint(ms)}).ToArray()
	if err != nil {
		return 0, 0, fmt.Errorf("count %q: %w", key, translate(err))
	}
	if len(vals) != 2 {
		return 0, 0, fmt.Errorf("count %q: %w: unexpected reply", key, ports.ErrUnavailable)
	}
	n, _ := vals[0].AsInt64()
	pttl, _ := vals[1].AsInt64()
	return n, time.Duration(max(pttl, 0)) * time.Millisecond, nil
}
