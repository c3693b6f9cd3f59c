// Package appkit is what the three binaries share: the redacting JSON
// logger, fx's own logging, and the start-wait-stop cycle of an fx app.
package appkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"go.uber.org/dig"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/july/template/core/redaction"
)

// StartTimeout bounds an app's start hooks.
const StartTimeout = 30 * time.Second

// NewLogger returns the apps' logger: one JSON object per line on w, its
// time in UTC, with
// attributes under sensitive keys redacted before they are written, and the
// ids each IDsFunc finds in the context added to every line logged with one,
// then the active span's trace_id and span_id (TraceIDs).
func NewLogger(w io.Writer, level slog.Level, ids ...IDsFunc) *slog.Logger {
	ids = append(slices.Clip(ids), TraceIDs)
	return slog.New(ctxHandler{inner: slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: replaceAttr}), ids: ids})
}

// replaceAttr writes each line's time in UTC, whatever the process's time
// zone (TZ=Asia/Shanghai and UTC hosts log alike, as the API and the
// events do), and redacts.
func replaceAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey && a.Value.Kind() == slog.KindTime {
		return slog.Time(slog.TimeKey, a.Value.Time().UTC())
	}
	return redaction.ReplaceAttr(groups, a)
}

// FxLogger routes fx's own events to log at debug level and silences them
// otherwise.
func FxLogger(level slog.Level, log *slog.Logger) fx.Option {
	return fx.WithLogger(func() fxevent.Logger {
		if level <= slog.LevelDebug {
			return &fxevent.SlogLogger{Logger: log}
		}
		return fxevent.NopLogger
	})
}

// ErrNotStarted wraps Serve's errors from building or starting the app
// (before started was called).
var ErrNotStarted = errors.New("did not start")

// Serve builds and starts the app, calls started, waits for ctx (SIGINT or
// SIGTERM in main), calls stopping and stops the app within stopTimeout.
// Start failures come back as errors: main exits once (fx's app.Run would
// call os.Exit itself).
func Serve(ctx context.Context, opts fx.Option, stopTimeout time.Duration, started, stopping func()) error {
	app := fx.New(opts)
	if err := app.Err(); err != nil {
		// The constructor's own error, not the chain of what needed it.
		return fmt.Errorf("%w: build app: %w", ErrNotStarted, dig.RootCause(err))
	}
	startCtx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	if err := app.Start(startCtx); err != nil {
		return fmt.Errorf("%w: start: %w", ErrNotStarted, err)
	}
	started()
	<-ctx.Done()
	stopping()
	stopCtx, cancelStop := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancelStop()
	return app.Stop(stopCtx)
}

// RunFunc is a binary's whole program with the OS passed in, so tests can
// drive it; it returns the process exit code.
type RunFunc func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int

// Main runs run with the process's arguments, environment and streams, a
// context cancelled by SIGINT or SIGTERM, and exits once with its code.
func Main(run RunFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
