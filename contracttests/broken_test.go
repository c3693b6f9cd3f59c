//go:build contractbreak

package contracttests_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/july/template/adapters/memory"
	"github.com/july/template/contracttests"
	"github.com/july/template/core/ports"
)

// TestBroken runs a suite against a deliberately broken adapter, chosen by
// CONTRACTTESTS_BROKEN. It exists only under the contractbreak build tag and
// is expected to FAIL: TestSuitesCatchBrokenAdapters runs it in a child
// process and checks the failure names the rule that was broken.
func TestBroken(t *testing.T) {
	switch os.Getenv("CONTRACTTESTS_BROKEN") {
	case "outbox-complete-without-lease":
		contracttests.RunOutboxStore(t, contracttests.OutboxCaps{}, func(t *testing.T) ports.OutboxStore {
			return &stealingStore{OutboxStore: memory.NewOutboxStore()}
		})
	case "cache-stale-refill":
		contracttests.RunConfigCache(t, contracttests.ConfigCacheCaps{}, func(t *testing.T) contracttests.ConfigCacheFixture {
			return contracttests.ConfigCacheFixture{Cache: forgetfulCache{memory.NewConfigCache(time.Now)}}
		})
	default:
		t.Fatal("set CONTRACTTESTS_BROKEN to a known case")
	}
}

// stealingStore completes rows whoever holds them: the classic bug of an
// UPDATE that forgets "AND lease_owner = ? AND lease_token = ?".
type stealingStore struct{ *memory.OutboxStore }

func (s *stealingStore) Complete(ctx context.Context, _ string, now time.Time, refs []ports.LeaseRef) ([]int64, error) {
	var lost []int64
	for _, ref := range refs {
		evs, err := s.List(ctx, ports.OutboxFilter{Limit: 500})
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			if ev.ID == ref.ID {
				l, err := s.OutboxStore.Complete(ctx, ev.Lease.Owner, now, []ports.LeaseRef{{ID: ev.ID, Token: ev.Lease.Token}})
				if err != nil {
					return nil, err
				}
				lost = append(lost, l...)
			}
		}
	}
	return lost, nil
}

// forgetfulCache invalidates without remembering the new version, so a slow
// reader can put a replaced value back.
type forgetfulCache struct{ *memory.ConfigCache }

func (c forgetfulCache) Invalidate(ctx context.Context, key string, _ int64, ttl time.Duration) error {
	return c.ConfigCache.Invalidate(ctx, key, 0, ttl)
}
