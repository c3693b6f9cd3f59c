package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/sysconfig"
)

// ConfigCache is an in-memory ports.ConfigCache driven by a clock, with a
// switch (SetDown) that simulates an outage: while down every call fails
// with an error wrapping ports.ErrUnavailable.
type ConfigCache struct {
	now func() time.Time

	outage
	mu      sync.Mutex
	rows    map[string]cachedRow
	markers map[string]marker
}

type cachedRow struct {
	row       sysconfig.Stored
	expiresAt time.Time
}

type marker struct {
	min       int64
	expiresAt time.Time
}

var _ ports.ConfigCache = (*ConfigCache)(nil)

// NewConfigCache returns an empty cache whose entries expire by now (pass
// time.Now, or a test clock).
func NewConfigCache(now func() time.Time) *ConfigCache {
	return &ConfigCache{now: now, rows: map[string]cachedRow{}, markers: map[string]marker{}}
}

// Get implements ports.ConfigCache.
func (c *ConfigCache) Get(_ context.Context, key string) (sysconfig.Stored, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.down("get cached config %q", key); err != nil {
		return sysconfig.Stored{}, err
	}
	e, ok := c.rows[key]
	if !ok || !c.now().Before(e.expiresAt) {
		return sysconfig.Stored{}, fmt.Errorf("get cached config %q: %w", key, ports.ErrNotFound)
	}
	return e.row, nil
}

// Fill implements ports.ConfigCache.
func (c *ConfigCache) Fill(_ context.Context, s sysconfig.Stored, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		return false, fmt.Errorf("fill cached config %q: ttl %s must be positive", s.Key, ttl)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.down("fill cached config %q", s.Key); err != nil {
		return false, err
	}
	now := c.now()
	if e, ok := c.rows[s.Key]; ok && now.Before(e.expiresAt) && e.row.Version > s.Version {
		return false, nil
	}
	if m, ok := c.markers[s.Key]; ok && now.Before(m.expiresAt) && m.min > s.Version {
		return false, nil
	}
	c.rows[s.Key] = cachedRow{row: s, expiresAt: now.Add(ttl)}
	return true, nil
}

// Invalidate implements ports.ConfigCache.
func (c *ConfigCache) Invalidate(_ context.Context, key string, minVersion int64, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("invalidate cached config %q: ttl %s must be positive", key, ttl)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.down("invalidate cached config %q", key); err != nil {
		return err
	}
	now := c.now()
	delete(c.rows, key)
	if m, ok := c.markers[key]; ok && now.Before(m.expiresAt) && m.min > minVersion {
		minVersion = m.min
	}
	c.markers[key] = marker{min: minVersion, expiresAt: now.Add(ttl)}
	return nil
}
