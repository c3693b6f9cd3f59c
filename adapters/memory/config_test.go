package memory_test

import (
	"sync"
	"testing"
	"time"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/contracttests"
	"github.com/july/template/core/ports"
)

// configClock is a test clock the cache and guard read through Now.
type configClock struct {
	mu  sync.Mutex
	now time.Time
}

func newConfigClock() *configClock {
	return &configClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *configClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

func (c *configClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *configClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestConfigStore(t *testing.T) {
	t.Parallel()

	contracttests.RunConfigStore(t, func(t *testing.T) contracttests.ConfigStoreFixture {
		s := memory.NewConfigStore()
		return contracttests.ConfigStoreFixture{
			Store:         s,
			Audits:        func(*testing.T) []ports.AuditRecord { return s.Audits() },
			FailNextAudit: s.FailNextAudit,
			Outage: func(_ *testing.T, live ports.ConfigStore) (ports.ConfigStore, func()) {
				s.SetDown(true)
				return live, func() { s.SetDown(false) }
			},
		}
	})
}

func TestConfigCache(t *testing.T) {
	t.Parallel()

	caps := contracttests.ConfigCacheCaps{Expiry: true}
	contracttests.RunConfigCache(t, caps, func(t *testing.T) contracttests.ConfigCacheFixture {
		clock := newConfigClock()
		c := memory.NewConfigCache(clock.Now)
		return contracttests.ConfigCacheFixture{
			Cache:   c,
			Advance: clock.Advance,
			Outage: func(_ *testing.T, live ports.ConfigCache) (ports.ConfigCache, func()) {
				c.SetDown(true)
				return live, func() { c.SetDown(false) }
			},
		}
	})
}
