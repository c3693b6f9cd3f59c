package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/july/template/core/ports"
)

// Guard is an in-memory ports.Guard whose holds expire by a clock.
// SetDown simulates an outage of the store behind it.
type Guard struct {
	now func() time.Time

	outage
	mu    sync.Mutex
	holds map[string]hold
}

type hold struct {
	owner     string
	expiresAt time.Time
}

var _ ports.Guard = (*Guard)(nil)

// NewGuard returns a Guard whose holds expire by now (pass time.Now, or a
// test clock).
func NewGuard(now func() time.Time) *Guard {
	return &Guard{now: now, holds: map[string]hold{}}
}

// Acquire implements ports.Guard.
func (g *Guard) Acquire(_ context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if owner == "" || ttl <= 0 {
		return false, fmt.Errorf("acquire guard %q: need an owner and a positive ttl, got %q and %s", key, owner, ttl)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.down("acquire guard %q", key); err != nil {
		return false, err
	}
	now := g.now()
	if h, ok := g.holds[key]; ok && now.Before(h.expiresAt) {
		return false, nil
	}
	g.holds[key] = hold{owner: owner, expiresAt: now.Add(ttl)}
	return true, nil
}

// Owner implements ports.Guard.
func (g *Guard) Owner(_ context.Context, key string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.down("guard owner %q", key); err != nil {
		return "", err
	}
	if h, ok := g.holds[key]; ok && g.now().Before(h.expiresAt) {
		return h.owner, nil
	}
	return "", nil
}

// Release implements ports.Guard.
func (g *Guard) Release(_ context.Context, key, owner string) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.down("release guard %q", key); err != nil {
		return false, err
	}
	h, ok := g.holds[key]
	if !ok || h.owner != owner || !g.now().Before(h.expiresAt) {
		return false, nil
	}
	delete(g.holds, key)
	return true, nil
}
