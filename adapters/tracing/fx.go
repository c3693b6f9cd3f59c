package tracing

import (
	"context"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
)

// Module provides *Provider and its trace.TracerProvider (a no-op one
// unless tracing is on, see Enabled) from the app's Config, and flushes
// buffered spans on stop. The HTTP server, the Postgres hook, the Asynq
// worker and the relay take the trace.TracerProvider.
var Module = fx.Module("tracing",
	fx.Provide(newProvider, func(p *Provider) trace.TracerProvider { return p.TracerProvider }),
)

func newProvider(lc fx.Lifecycle, cfg Config) (*Provider, error) {
	p, err := New(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.StopHook(p.Shutdown))
	return p, nil
}
