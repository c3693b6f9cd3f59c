// Package postgres is the Postgres adapter's root: it opens bun over the pgx
// stdlib driver (Open, Config, Health), owns the foundation migrations
// (tb_outbox_event, tb_system_config, tb_backfill_checkpoint), LISTENs for
// outbox inserts (Listener) and wires the stores into fx (Module,
// RelayModule). The stores live in one sub-package per concept:
//
//   - pgoutbox: the outbox store, Append for business transactions, the audit seam;
//   - pgidem: idempotency keys on business rows, conditional transitions, version locks;
//   - pgtasks: the five-state task store on a business's own task table;
//   - pgconfig: the system-config store;
//   - release: pre- and post-flight checks, locked migrate up/down, backfills.
//
// All of them translate driver errors in one place (internal/pgerr) into
// ports.ErrNotFound, ports.ErrConflict and ports.ErrUnavailable.
//
// Transactions belong to the caller. Business code opens one with
// db.RunInTx and passes the bun.Tx, as a bun.IDB, to every adapter function
// that must commit or roll back with the business fact. There is no
// UnitOfWork, no transaction factory and no transaction hidden in a context:
//
//	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
//		if _, err := tx.NewInsert().Model(&order).Exec(ctx); err != nil {
//			return fmt.Errorf("insert order: %w", err)
//		}
//		return pgoutbox.Append(ctx, tx, event) // same transaction, same fate
//	})
//
// Redis, asynq and HTTP calls never run inside such a transaction; they
// happen after commit (the relay delivers the outbox).
package postgres
