// Package pgoutbox is the outbox on tb_outbox_event: Append for business
// code, Store (ports.OutboxStore and ports.OutboxOperatorStore) for the
// relay and its operators, and the AuditWriter seam with its default,
// EventAuditWriter, which publishes audit records as outbox events.
//
// Business code appends in its own transaction, so the event commits or
// rolls back with the business fact:
//
//	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
//		if _, err := tx.NewInsert().Model(&order).Exec(ctx); err != nil {
//			return fmt.Errorf("insert order: %w", err)
//		}
//		return pgoutbox.Append(ctx, tx, event) // same transaction, same fate
//	})
package pgoutbox
