package startstop_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/july/template/core/startstop"
)

func TestStopBeforeStartAndTwice(t *testing.T) {
	t.Parallel()
	var s startstop.Service
	if err := s.Stop(t.Context()); err != nil {
		t.Fatalf("stop before start: %v", err)
	}
	var runs atomic.Int32
	started := make(chan struct{})
	s.Start(func(ctx context.Context) { runs.Add(1); close(started); <-ctx.Done() })
	s.Start(func(ctx context.Context) { runs.Add(1) }) // already running: ignored
	<-started
	if err := s.Stop(t.Context()); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := s.Stop(t.Context()); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("run ran %d times, want 1 (a second Start while running must do nothing)", n)
	}
}

func TestStopWaitsForRunOrContext(t *testing.T) {
	t.Parallel()
	var s startstop.Service
	release := make(chan struct{})
	s.Start(func(ctx context.Context) { <-ctx.Done(); <-release })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := s.Stop(ctx); err == nil {
		t.Fatal("stop returned nil while run was still running; it must report the expired context")
	}
	close(release)
}

func TestRestartAfterStop(t *testing.T) {
	t.Parallel()
	var s startstop.Service
	var runs atomic.Int32
	for range 2 {
		s.Start(func(ctx context.Context) { runs.Add(1); <-ctx.Done() })
		if err := s.Stop(t.Context()); err != nil {
			t.Fatalf("stop: %v", err)
		}
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("run ran %d times, want 2 (a stopped service starts again)", n)
	}
}
