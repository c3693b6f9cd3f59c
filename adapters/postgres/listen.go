package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/july/template/core/startstop"
)

// OutboxChannel is the NOTIFY channel the tb_outbox_event insert trigger
// signals once per inserting statement.
const OutboxChannel = "outbox_event"

// Listener holds one dedicated connection that LISTENs on a channel and
// calls NotifyFunc for every notification. When the connection drops it
// reconnects with backoff; the relay's polling covers the gap, so a lost
// listener only costs latency, never events.
type Listener struct {
	url        string
	channel    string
	notifyFunc func()
	log        *slog.Logger

	svc   startstop.Service
	ready chan struct{}
	once  sync.Once
}

// NewListener returns a Listener for channel on the database at url.
func NewListener(url, channel string, notifyFunc func(), log *slog.Logger) *Listener {
	if log == nil {
		log = slog.Default()
	}
	return &Listener{url: url, channel: channel, notifyFunc: notifyFunc, log: log, ready: make(chan struct{})}
}

// Start connects in the background and returns immediately.
func (l *Listener) Start(context.Context) error {
	l.svc.Start(l.run)
	return nil
}

// Ready is closed once the first LISTEN succeeded (for tests and readiness).
func (l *Listener) Ready() <-chan struct{} { return l.ready }

// Stop closes the connection and waits for the goroutine. Safe to repeat.
func (l *Listener) Stop(ctx context.Context) error { return l.svc.Stop(ctx) }

func (l *Listener) run(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := l.listen(ctx, func() { l.once.Do(func() { close(l.ready) }) })
		if ctx.Err() != nil {
			return
		}
		l.log.Warn("postgres LISTEN connection lost; relay falls back to polling until it reconnects",
			"channel", l.channel, "retry_in", backoff.String(), "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

func (l *Listener) listen(ctx context.Context, onReady func()) error {
	conn, err := pgx.Connect(ctx, l.url)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.channel}.Sanitize()); err != nil {
		return fmt.Errorf("listen %s: %w", l.channel, err)
	}
	onReady()
	l.notifyFunc() // catch up on anything inserted while we were away
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		l.notifyFunc()
	}
}
