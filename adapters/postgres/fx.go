package postgres

import (
	"context"
	"log/slog"
	"maps"

	"github.com/uptrace/bun"
	"go.uber.org/fx"

	"github.com/july/template/adapters/postgres/pgaudit"
	"github.com/july/template/adapters/postgres/pgconfig"
	"github.com/july/template/adapters/postgres/pgoutbox"
	"github.com/july/template/core/ports"
)

// Module provides, from the Config the app supplies
// (fx.Supply(postgres.Config{...})): the *bun.DB (closed on stop) that
// business code opens its transactions on; on it a pgoutbox.Store as
// ports.OutboxStore and ports.OutboxOperatorStore, and a pgconfig.Store as
// ports.ConfigStore (audit records through a pgoutbox.EventAuditWriter);
// and its readiness Probe.
var Module = fx.Module("postgres",
	fx.Provide(
		newFxDB,
		fx.Annotate(newFxOutboxStore, fx.As(new(ports.OutboxStore)), fx.As(new(ports.OutboxOperatorStore))),
		fx.Annotate(newFxConfigStore, fx.As(new(ports.ConfigStore))),
		fx.Annotate(pgconfig.NewPins, fx.As(new(ports.ConfigPins))),
		fx.Annotate(newFxAuditInbox, fx.As(new(ports.AuditInbox))),
		newFxProbe,
	),
)

// RelayOutboxName names the relay's own outbox store in the fx graph
// (RelayModule): `name:"relay_outbox"`.
const RelayOutboxName = `name:"relay_outbox"`

// relayParams name the relay's own pool, separate from the module's
// *bun.DB, in pg_stat_activity. Its store's writes (claim, complete, fail,
// consumption records) commit without waiting for the WAL flush, each
// statement for its own transaction (pgoutbox.Config.AsynchronousCommit;
// a startup parameter would be refused by a pooler in transaction mode):
// a database crash can at worst lose the last few marks, which re-delivers
// those events (at least once, as designed) or forgets a claim.
// Consumers' business writes and the dead-letter mark go through the
// module's *bun.DB and keep synchronous commits.
var relayParams = map[string]string{"application_name": "outbox-relay"}

// Notifier is woken by the Listener on every outbox NOTIFY;
// relay.Relay implements it.
type Notifier interface{ Notify() }

// RelayModule adds what the relay binary needs on top of Module: a
// pgoutbox.Store as ports.OutboxStore and ports.OutboxOperatorStore, named
// RelayOutboxName, on a pool of its own with asynchronous commit (see
// relayParams), and a *Listener on OutboxChannel, on Config.DirectURL
// (DATABASE_DIRECT_URL), that wakes the graph's Notifier and probes itself
// through Module's pool, started and stopped with the app.
var RelayModule = fx.Module("postgres-relay",
	fx.Provide(
		fx.Annotate(newFxRelayDB, fx.ResultTags(relayDBName)),
		fx.Annotate(newFxRelayOutbox, fx.ResultTags(RelayOutboxName), fx.As(new(ports.OutboxStore)), fx.As(new(ports.OutboxOperatorStore))),
		newFxListener,
	),
	fx.Invoke(func(*Listener) {}),
)

func newFxDB(lc fx.Lifecycle, cfg Config) (*bun.DB, error) {
	db, err := Open(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.StopHook(db.Close))
	return db, nil
}

func newFxOutboxStore(db *bun.DB) (*pgoutbox.Store, error) {
	return pgoutbox.NewStore(db, pgoutbox.Config{})
}

func newFxConfigStore(db *bun.DB) (*pgconfig.Store, error) {
	return pgconfig.NewStore(db, pgoutbox.NewEventAuditWriter(pgoutbox.AuditConfig{}))
}

func newFxAuditInbox(db *bun.DB) (*pgaudit.Inbox, error) { return pgaudit.NewInbox(db) }

// Probe is Module's readiness probe of the database, named "postgres"; an
// app lists it among the ports.Probe its readiness endpoint checks.
type Probe struct{ ports.Probe }

func newFxProbe(db *bun.DB) Probe {
	return Probe{ports.Probe{Name: "postgres", Check: func(ctx context.Context) error { return Health(ctx, db) }}}
}

// newFxRelayDB opens the relay's own pool (see relayParams).
func newFxRelayDB(lc fx.Lifecycle, cfg Config) (*bun.DB, error) {
	cfg.RuntimeParams = maps.Clone(cfg.RuntimeParams)
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	maps.Copy(cfg.RuntimeParams, relayParams)
	db, err := Open(context.Background(), cfg)
	if err != nil {
		return nil, err // an *OpenError: it says what to do, whichever pool failed
	}
	lc.Append(fx.StopHook(db.Close))
	return db, nil
}

// relayDB is RelayModule's pool as an fx parameter.
type relayDB struct {
	fx.In
	DB *bun.DB `name:"postgres_relay_db"` // relayDBName
}

func newFxRelayOutbox(p relayDB, cfg Config) (*pgoutbox.Store, error) {
	return pgoutbox.NewStore(p.DB, pgoutbox.Config{AsynchronousCommit: true, ClaimBytes: cfg.RelayClaimBytes})
}

// newFxListener LISTENs on cfg.DirectURL (default URL) and probes itself
// with a NOTIFY sent through db, Module's pool.
func newFxListener(lc fx.Lifecycle, cfg Config, db *bun.DB, n Notifier, log *slog.Logger) *Listener {
	l := NewListenerWith(ListenerConfig{
		URL: cfg.directURL(), Channel: OutboxChannel, Notify: n.Notify, Log: log,
		Probe: func(ctx context.Context, payload string) error {
			_, err := db.ExecContext(ctx, "SELECT pg_notify(?, ?)", OutboxChannel, payload)
			return err
		},
	})
	lc.Append(fx.Hook{OnStart: l.Start, OnStop: l.Stop})
	return l
}
