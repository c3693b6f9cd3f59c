package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/fx"

	"github.com/july/template/core/relay"
)

// Module provides the app's *prometheus.Registry (also as
// prometheus.Registerer) and its /metrics handler.
var Module = fx.Module("metrics",
	fx.Provide(
		fx.Annotate(NewRegistry, fx.As(fx.Self()), fx.As(new(prometheus.Registerer))),
		newHandler,
	),
)

// RelayModule provides the relay's counters: relay.Observer,
// ConsumerFailedFunc, RetentionRemovedFunc and *SweepMetrics.
var RelayModule = fx.Module("metrics-relay",
	fx.Provide(
		fx.Annotate(NewRelayMetrics, fx.As(new(relay.Observer))),
		NewConsumerFailures,
		NewRetentionRemoved,
		NewSweepMetrics,
	),
)

// ProbeModule exports dependency_up{component,dependency} for every
// probe of the app's []ports.Probe, run at scrape time, and
// service_build_info. The app supplies the probes, its Component
// (fx.Supply(metrics.Component("api"))), its BuildInfo and a ports.Clock.
var ProbeModule = fx.Module("metrics-probes", fx.Invoke(RegisterProbes, RegisterBuildInfo))

// Handler serves the registry in the Prometheus text format, or in
// OpenMetrics (with the delivery-lag exemplars) to a scraper that asks for it.
type Handler http.Handler

func newHandler(reg *prometheus.Registry) Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, EnableOpenMetrics: true})
}
