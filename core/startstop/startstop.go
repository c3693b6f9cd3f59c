// Package startstop is the one start/stop contract of every background
// service (relay loops, sweepers, the LISTEN connection, HTTP servers):
// Start returns at once, Stop is safe before Start and more than once, and
// Stop waits for the work to end or for its context.
//
// Periodic builds on Service for every periodic job of the service floor
// (a pass now, then one every interval on a ports.Clock), and ConfigError
// is how the floor's constructors refuse a setting.
package startstop

import (
	"context"
	"fmt"
	"sync"
)

// Service runs one function in the background. The zero value is ready.
type Service struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs run in a new goroutine with a context that Stop cancels, and
// returns at once. It does nothing while run is still running. The
// context is not derived from any caller's: an fx start context carries
// the start timeout and must not end the work.
func (s *Service) Start(run func(ctx context.Context)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.cancel, s.done = cancel, done
	go func() {
		defer close(done)
		run(ctx)
	}()
}

// Stop cancels run's context and waits until run returns or ctx ends. It
// is safe before Start and more than once; after it returns nil the
// service may be started again.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.cancel = nil
	s.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop: %w", ctx.Err())
	}
}
