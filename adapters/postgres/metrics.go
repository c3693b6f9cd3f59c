package postgres

import (
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
var MetricsModule = fx.Module("postgres-metrics",
	fx.Invoke(fx.Annotate(RegisterPoolStats, fx.ParamTags(``, ``, relayDBName+` optional:"true"`))),
)

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
