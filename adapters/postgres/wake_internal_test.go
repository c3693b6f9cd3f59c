package postgres

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type fakeNotifier struct {
	mu     *sync.Mutex
	sent   *int
	fail   *bool
	closed *int
}

func (f fakeNotifier) Notify(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if *f.fail {
		*f.fail = false
		return errors.New("connection lost")
	}
	*f.sent++
	return nil
}

func (f fakeNotifier) Close() { f.mu.Lock(); *f.closed++; f.mu.Unlock() }

// TestWakerReconnectsAfterAFailedNotify: a failed NOTIFY drops its
// connection and the next wake-up dials a new one; every wake-up is
// followed by a NOTIFY sent after it.
func TestWakerReconnectsAfterAFailedNotify(t *testing.T) {
	var (
		mu                  sync.Mutex
		sent, dials, closed int
		fail                = true
	)
	w := &waker{kick: make(chan struct{}, 1), dial: func(context.Context) (notifier, error) {
		mu.Lock()
		dials++
		mu.Unlock()
		return fakeNotifier{&mu, &sent, &fail, &closed}, nil
	}}
	read := func() (int, int, int) { mu.Lock(); defer mu.Unlock(); return sent, dials, closed }

	w.wake() // fails: the connection is closed
	require.Eventually(t, func() bool { _, d, c := read(); return d == 1 && c == 1 }, 5*time.Second, time.Millisecond)
	w.wake()
	require.Eventually(t, func() bool { s, d, _ := read(); return s == 1 && d == 2 }, 5*time.Second, time.Millisecond,
		"rule: the next wake-up reconnects and notifies")
	w.wake()
	require.Eventually(t, func() bool { s, _, _ := read(); return s == 2 }, 5*time.Second, time.Millisecond)
	_, d, _ := read()
	require.Equal(t, 2, d, "rule: a live connection is reused")
}
