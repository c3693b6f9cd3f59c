package postgres

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/uptrace/bun"
	"go.uber.org/fx"
)

// Pool names in the db_name label of the go_sql_* pool metrics.
const (
	// MainPool is Module's *bun.DB (business transactions, operator reads).
	MainPool = "main"
	// RelayPool is RelayModule's own pool (claim, complete, fail).
	RelayPool = "relay_outbox"
)

// relayDBName names RelayModule's pool in the fx graph.
const relayDBName = `name:"postgres_relay_db"`

// MetricsModule exports database/sql pool statistics for Module's pool
// and, in the relay, RelayModule's: go_sql_open_connections,
// go_sql_in_use_connections, go_sql_idle_connections,
// go_sql_max_open_connections, go_sql_wait_count_total,
// go_sql_wait_duration_seconds_total and the go_sql_*_closed_total
// counters, each with db_name = MainPool or RelayPool. It needs a
// prometheus.Registerer from the app.
//
// In the relay (RelayModule's *Listener in the graph) it also exports
// outbox_listen_working (RegisterListenerMetrics).
var MetricsModule = fx.Module("postgres-metrics",
	fx.Invoke(func(p metricsParams) error {
		return errors.Join(RegisterPoolStats(p.Reg, p.Main, p.Relay), RegisterListenerMetrics(p.Reg, p.Listener))
	}),
)

// metricsParams is what MetricsModule reads; the relay's pool and the
// listener exist only in the relay.
type metricsParams struct {
	fx.In
	Reg      prometheus.Registerer
	Main     *bun.DB
	Relay    *bun.DB   `name:"postgres_relay_db" optional:"true"` // relayDBName
	Listener *Listener `optional:"true"`
}

// RegisterListenerMetrics registers outbox_listen_working for l on reg:
// 1 while l's LISTEN connection receives its own probe NOTIFY, 0 while it
// is down or deaf (DATABASE_DIRECT_URL goes through a pooler in
// transaction mode), when the relay polls every DefaultFallbackPoll. A
// nil l registers nothing.
func RegisterListenerMetrics(reg prometheus.Registerer, l *Listener) error {
	if l == nil {
		return nil
	}
	g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "outbox_listen_working",
		Help: "1 while the relay's LISTEN connection receives notifications (its probe NOTIFY came back); 0 while it is down or deaf (DATABASE_DIRECT_URL goes through a pooler): the relay then polls every 50ms.",
	}, func() float64 {
		if l.Working() {
			return 1
		}
		return 0
	})
	if err := reg.Register(g); err != nil {
		return fmt.Errorf("register outbox_listen_working: %w", err)
	}
	return nil
}

// RegisterPoolStats registers the pool collectors of main and, when not
// nil, relay on reg.
func RegisterPoolStats(reg prometheus.Registerer, main, relay *bun.DB) error {
	if err := reg.Register(collectors.NewDBStatsCollector(main.DB, MainPool)); err != nil {
		return fmt.Errorf("register %s pool metrics: %w", MainPool, err)
	}
	if relay == nil {
		return nil
	}
	if err := reg.Register(collectors.NewDBStatsCollector(relay.DB, RelayPool)); err != nil {
		return fmt.Errorf("register %s pool metrics: %w", RelayPool, err)
	}
	return nil
}
