package startstop_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/ports"
	"github.com/july/template/core/startstop"
)

// tickClock is a ports.Clock whose After waits for the test: each call
// reports its duration on waits and returns fire.
type tickClock struct {
	waits chan time.Duration
	fire  chan time.Time
}

func newTickClock() *tickClock {
	return &tickClock{waits: make(chan time.Duration, 100), fire: make(chan time.Time)}
}

func (c *tickClock) Now() time.Time { return time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) }
func (c *tickClock) After(d time.Duration) <-chan time.Time {
	c.waits <- d
	return c.fire
}

// syncBuffer is a bytes.Buffer safe for the loop's logger and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestPeriodic(t *testing.T) {
	t.Parallel()

	type testBundle struct {
		clock  *tickClock
		passes chan int
		logs   *syncBuffer
		p      *startstop.Periodic
	}
	setup := func(t *testing.T, pass func(n int) error) *testBundle {
		t.Helper()
		b := &testBundle{clock: newTickClock(), passes: make(chan int, 100), logs: &syncBuffer{}}
		n := 0
		p, err := startstop.NewPeriodic(func(context.Context) error {
			n++
			select {
			case b.passes <- n:
			default: // a loop that does not wait fills the buffer; the test fails on it
			}
			return pass(n)
		}, b.clock, startstop.PeriodicConfig{Name: "test sweep", Every: 7 * time.Second,
			Logger: slog.New(slog.NewTextHandler(b.logs, nil))})
		require.NoError(t, err)
		b.p = p
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = p.Stop(ctx)
		})
		return b
	}
	// next returns the next value of ch, failing after 5 s (a pass or a
	// wait that never comes).
	next := func(t *testing.T, ch <-chan int) int {
		t.Helper()
		select {
		case v := <-ch:
			return v
		case <-time.After(5 * time.Second):
			t.Fatal("no pass within 5s")
			return 0
		}
	}
	wait := func(t *testing.T, b *testBundle) time.Duration {
		t.Helper()
		select {
		case d := <-b.clock.waits:
			return d
		case <-time.After(5 * time.Second):
			t.Fatal("the loop did not wait on the clock within 5s; it must pause through ports.Clock.After")
			return 0
		}
	}
	noPass := func(t *testing.T, b *testBundle) {
		t.Helper()
		select {
		case n := <-b.passes:
			t.Fatalf("pass %d ran before the clock fired; a pass must wait for Every", n)
		case <-time.After(50 * time.Millisecond):
		}
	}

	t.Run("PassAtStartThenOncePerTick", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(int) error { return nil })
		require.NoError(t, b.p.Start(t.Context()))
		require.Equal(t, 1, next(t, b.passes), "the first pass runs at Start")
		require.Equal(t, 7*time.Second, wait(t, b), "then it waits Every on the clock")
		noPass(t, b)
		b.clock.fire <- time.Time{}
		require.Equal(t, 2, next(t, b.passes))
		require.Equal(t, 7*time.Second, wait(t, b))
		require.NoError(t, b.p.Stop(t.Context()))
		noPass(t, b)
		require.Empty(t, b.logs.String(), "passes without an error log nothing")
	})

	t.Run("FailedPassIsLoggedAndTheNextRuns", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(n int) error {
			if n == 1 {
				return errors.New("store unavailable")
			}
			return nil
		})
		require.NoError(t, b.p.Start(t.Context()))
		next(t, b.passes)
		wait(t, b)
		require.Contains(t, b.logs.String(), `msg="test sweep failed; will retry" error="store unavailable"`)
		b.clock.fire <- time.Time{}
		require.Equal(t, 2, next(t, b.passes), "a failed pass does not end the loop")
	})

	t.Run("StopNamesTheServiceWhenItTimesOut", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		b := setup(t, func(int) error { <-release; return nil })
		require.NoError(t, b.p.Stop(t.Context()), "stop before start is a no-op")
		require.NoError(t, b.p.Start(t.Context()))
		next(t, b.passes)
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancel()
		err := b.p.Stop(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded, "stop waits for the pass in flight, bounded by ctx")
		require.ErrorContains(t, err, "test sweep: ")
		close(release)
	})
}

func TestNewPeriodicRefusesBadConfig(t *testing.T) {
	t.Parallel()
	pass := func(context.Context) error { return nil }
	for name, tc := range map[string]struct {
		pass  startstop.PassFunc
		clock ports.Clock
		cfg   startstop.PeriodicConfig
		field string
	}{
		"no pass":     {nil, ports.SystemClock, startstop.PeriodicConfig{Name: "x", Every: time.Second}, "NewPeriodic pass"},
		"no clock":    {pass, nil, startstop.PeriodicConfig{Name: "x", Every: time.Second}, "NewPeriodic clock"},
		"no name":     {pass, ports.SystemClock, startstop.PeriodicConfig{Every: time.Second}, "Name"},
		"no interval": {pass, ports.SystemClock, startstop.PeriodicConfig{Name: "x"}, "Every"},
	} {
		_, err := startstop.NewPeriodic(tc.pass, tc.clock, tc.cfg)
		var ce *startstop.ConfigError
		require.ErrorAs(t, err, &ce, name)
		require.Equal(t, tc.field, ce.Field, name)
	}
}

func TestCheckRange(t *testing.T) {
	t.Parallel()
	require.NoError(t, startstop.CheckRange("sweep", "XConfig", "Batch", 5, 1, 10))
	err := startstop.CheckRange("sweep", "XConfig", "Every", time.Millisecond, time.Second, time.Hour)
	var ce *startstop.ConfigError
	require.ErrorAs(t, err, &ce)
	require.EqualError(t, err, "sweep: XConfig.Every 1ms: set it within 1s..1h0m0s")
}
