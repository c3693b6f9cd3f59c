package httpx

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/july/template/core/startstop"
)

// DefaultShutdownTimeout is the default HTTPServer drain time.
const DefaultShutdownTimeout = 15 * time.Second

// HTTPServer runs an *http.Server under startstop's contract: Start
// listens (so a taken port fails the start) and serves in the background;
// Stop drains in-flight requests for ShutdownTimeout.
type HTTPServer struct {
	srv             *http.Server
	shutdownTimeout time.Duration
	log             *slog.Logger
	svc             startstop.Service
	addr            atomic.Pointer[net.Addr]
	drainDelay      time.Duration
	onDrain         func()
}

// DefaultDrainDelay is how long Stop keeps serving after it flipped
// readiness, so the orchestrator sees the failing probe and removes the
// instance from its endpoints before the listener closes. It covers a
// Kubernetes readiness probe of periodSeconds 5 failing once, plus the
// endpoint propagation lag.
const DefaultDrainDelay = 5 * time.Second

// SetDrain makes Stop call onDrain (e.g. Health.Drain) first and keep
// serving new and in-flight requests for delay before it stops accepting
// and waits for in-flight requests up to the shutdown timeout. Call it
// before Start; delay 0 skips the wait.
func (s *HTTPServer) SetDrain(delay time.Duration, onDrain func()) {
	s.drainDelay, s.onDrain = delay, onDrain
}

// NewHTTPServer returns a server for srv (its Addr and Handler set).
// shutdownTimeout 0 means DefaultShutdownTimeout.
func NewHTTPServer(srv *http.Server, shutdownTimeout time.Duration, log *slog.Logger) *HTTPServer {
	if shutdownTimeout <= 0 {
		shutdownTimeout = DefaultShutdownTimeout
	}
	if log == nil {
		log = slog.Default()
	}
	return &HTTPServer{srv: srv, shutdownTimeout: shutdownTimeout, log: log}
}

// Start listens on the server's Addr and serves in the background.
func (s *HTTPServer) Start(context.Context) error {
	ln, err := net.Listen("tcp", s.srv.Addr)
	if err != nil {
		return err
	}
	addr := ln.Addr()
	s.addr.Store(&addr)
	s.svc.Start(func(ctx context.Context) {
		served := make(chan error, 1)
		go func() { served <- s.srv.Serve(ln) }()
		select {
		case err := <-served:
			if !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("http server stopped", "addr", s.srv.Addr, "error", err)
			}
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), s.shutdownTimeout)
			defer cancel()
			if err := s.srv.Shutdown(sctx); err != nil {
				s.log.Warn("http server did not drain in time", "addr", s.srv.Addr, "error", err)
			}
		}
	})
	return nil
}

// Addr is the address the server listens on once started (":0" picks a
// free port), or nil before Start.
func (s *HTTPServer) Addr() net.Addr {
	if a := s.addr.Load(); a != nil {
		return *a
	}
	return nil
}

// Stop flips readiness (SetDrain), keeps serving for the drain delay, then
// stops accepting and waits for in-flight requests for the shutdown
// timeout, returning at the latest when ctx ends.
func (s *HTTPServer) Stop(ctx context.Context) error {
	if s.onDrain != nil {
		s.onDrain()
	}
	if s.drainDelay > 0 && s.Addr() != nil {
		s.log.Info("draining: readiness fails, still serving", "addr", s.srv.Addr, "drain_delay", s.drainDelay.String())
		select {
		case <-time.After(s.drainDelay):
		case <-ctx.Done():
		}
	}
	return s.svc.Stop(ctx)
}
