package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

// ErrNoURL is returned (wrapped in an *OpenError) by Open when Config.URL
// is empty.
var ErrNoURL = errors.New("postgres url is empty: set DATABASE_URL to postgres://user@host:5432/db")

// Open returns a bun.DB over the pgx stdlib driver with the pool sized by
// cfg, after checking that the server answers. The caller closes it. Any
// failure is an *OpenError that says, in a sentence, what went wrong and
// what to do, naming the variable the URL came from (Config.Env).
//
// The pool needs no session state, so cfg.URL may be a pooler in
// transaction mode (PgBouncer): it sends no startup parameter but
// application_name and those in cfg.RuntimeParams, and queries use the
// simple protocol (no prepared statements) unless the URL sets
// default_query_exec_mode. Outbox wake-ups go out after commit (wake.go)
// unless cfg.NotifyInTx.
func Open(ctx context.Context, cfg Config) (*bun.DB, error) {
	cfg = cfg.withDefaults()
	if cfg.URL == "" {
		return nil, &OpenError{Env: cfg.Env, Reason: cfg.Env + " is empty", Hint: "set " + cfg.Env + " to postgres://user@host:5432/db (a password goes after the user, percent-encoded)", Err: ErrNoURL}
	}
	pcfg, err := pgx.ParseConfig(cfg.URL)
	if err != nil {
		// pgx may echo the URL (and its password) in the error; do not.
		return nil, &OpenError{Env: cfg.Env, Reason: cfg.Env + " is not a valid postgres URL (value hidden)",
			Hint: "set " + cfg.Env + " to postgres://user@host:5432/db (a password goes after the user, percent-encoded)",
			Err:  errors.New("parse postgres url: malformed")}
	}
	if !strings.Contains(cfg.URL, "default_query_exec_mode") {
		// bun inlines every argument, so each statement text is new: pgx's
		// default cache_statement mode would prepare and cache each one
		// (an extra round trip per query). The simple protocol sends it
		// once; outboxbench measured about 25% more relay throughput. It
		// also prepares nothing, which a pooler in transaction mode needs
		// (PgBouncer before 1.21 cannot keep prepared statements).
		pcfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	}
	pcfg.DialFunc = classifyDial(pcfg.DialFunc)
	for k, v := range cfg.RuntimeParams {
		pcfg.RuntimeParams[k] = v
	}
	wakeAfterCommit := cfg.wakesAfterCommit()
	sqldb := stdlib.OpenDB(*pcfg)
	sqldb.SetMaxOpenConns(cfg.MaxOpenConns)
	sqldb.SetMaxIdleConns(cfg.MaxIdleConns)
	sqldb.SetConnMaxLifetime(cfg.ConnMaxLifetime)
	sqldb.SetConnMaxIdleTime(cfg.ConnMaxIdleTime)
	db := bun.NewDB(sqldb, pgdialect.New())
	db = db.WithQueryHook(traceHook{namespace: pcfg.Database})
	if wakeAfterCommit {
		db = db.WithQueryHook(wakeHook{w: newWaker(pcfg)})
	}

	pctx, cancel := context.WithTimeout(ctx, cfg.PingTimeout)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		_ = db.Close()
		return nil, openError(cfg, pcfg, err)
	}
	return db, nil
}

// Health reports whether Postgres answers a trivial query; readiness probes
// call it.
func Health(ctx context.Context, db bun.IDB) error {
	var one int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("postgres health: %w", err)
	}
	return nil
}
