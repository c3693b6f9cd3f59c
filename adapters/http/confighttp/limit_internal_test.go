package confighttp

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/july/template/core/ports"
)

// flakyCounter is Redis under load: every other call times out.
type flakyCounter struct {
	mu    sync.Mutex
	calls int
	m     memCounter
}

func (f *flakyCounter) Add(_ context.Context, key string, delta int64, window time.Duration) (int64, time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls%2 == 0 {
		return 0, 0, fmt.Errorf("count %q: %w: context deadline exceeded", key, ports.ErrUnavailable)
	}
	n, reset := f.m.Add(key, delta, window, time.Now())
	return n, reset, nil
}

// Regression (seen in a service's gate at load 16): when some of Redis's
// answers time out, the rejections counted in process and those counted
// in Redis are each below the limit, and the flood is never limited.
// Every rejection counts in process too, and the higher count decides.
func TestRejectLimitHoldsWhenRedisAnswersSometimes(t *testing.T) {
	l := &RejectLimit{Counter: &flakyCounter{}}
	ctx := context.Background()
	for range DefaultRejectMax {
		l.add(ctx, "config-rejected:flooder", 0)
		l.add(ctx, "config-rejected:flooder", 1)
	}
	if n, _ := l.add(ctx, "config-rejected:flooder", 0); n < DefaultRejectMax {
		t.Fatalf("after %d rejections the count is %d: the next PUT is not limited", DefaultRejectMax, n)
	}
}
