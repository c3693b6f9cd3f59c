// Package postgres is the Postgres adapter: it opens bun over the pgx stdlib
// driver, owns the foundation migrations (tb_outbox_event, tb_system_config,
// tb_backfill_checkpoint) and translates driver errors into ports.ErrNotFound and
// ErrConflict.
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
//		return postgres.AppendOutbox(ctx, tx, event) // same transaction, same fate
//	})
//
// Redis, asynq and HTTP calls never run inside such a transaction; they
// happen after commit (the relay delivers the outbox).
package postgres
