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

// DefaultGuardPrefix is the default GuardConfig.Prefix.
const DefaultGuardPrefix = "guard:"

// GuardConfig configures a Guard. The zero value is valid.
type GuardConfig struct {
	// Prefix starts every guard key. Default: DefaultGuardPrefix.
	Prefix string
	// Timeout bounds every call, on top of the caller's context.
	// Default: DefaultTimeout.
	Timeout time.Duration
}

// Guard is ports.Guard on Redis: Acquire is SET key owner NX PX ttl and
// Release a compare-and-delete script, so an owner whose guard expired
// and was taken over never frees the new holder's guard.
type Guard struct {
	client rueidis.Client
	cfg    GuardConfig
}

var _ ports.Guard = (*Guard)(nil)

// NewGuard returns a Guard on client. It returns an error for a nil client
// or a negative timeout.
func NewGuard(client rueidis.Client, cfg GuardConfig) (*Guard, error) {
	if client == nil {
		return nil, errors.New("redis: NewGuard needs a rueidis client")
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("redis: GuardConfig.Timeout %s is negative; use 0 for DefaultTimeout", cfg.Timeout)
	}
	cfg.Prefix = cmp.Or(cfg.Prefix, DefaultGuardPrefix)
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	return &Guard{client: client, cfg: cfg}, nil
}

// Acquire implements ports.Guard. An empty owner or a ttl below one
// millisecond is an error.
func (g *Guard) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if owner == "" {
		return false, fmt.Errorf("acquire guard %q: owner is empty; pass a unique owner id", key)
	}
	ms, err := milliseconds(fmt.Sprintf("acquire guard %q", key), ttl)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	cmd := g.client.B().Set().Key(g.cfg.Prefix + key).Value(owner).Nx().PxMilliseconds(ms).Build()
	err = translate(g.client.Do(ctx, cmd).Error())
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ports.ErrNotFound): // NX refused: someone holds it
		return false, nil
	}
	return false, fmt.Errorf("acquire guard %q: %w", key, err)
}

// Owner implements ports.Guard: GET key.
func (g *Guard) Owner(ctx context.Context, key string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	owner, err := g.client.Do(ctx, g.client.B().Get().Key(g.cfg.Prefix+key).Build()).ToString()
	switch err = translate(err); {
	case err == nil:
		return owner, nil
	case errors.Is(err, ports.ErrNotFound):
		return "", nil
	}
	return "", fmt.Errorf("guard owner %q: %w", key, err)
}

// releaseScript deletes KEYS[1] only while it still holds ARGV[1].
var releaseScript = rueidis.NewLuaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// Release implements ports.Guard.
func (g *Guard) Release(ctx context.Context, key, owner string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	n, err := releaseScript.Exec(ctx, g.client, []string{g.cfg.Prefix + key}, []string{owner}).AsInt64()
	if err != nil {
		return false, fmt.Errorf("release guard %q: %w", key, translate(err))
	}
	return n == 1, nil
}
