-- The partial index the idempotency retention (pgidem.Expirer) scans:
-- only rows that still hold a record, oldest first.
-- migrate:allow lint_index_not_concurrent: ex_topup_order is an example table with few rows; a service whose table is large builds this index with CREATE INDEX CONCURRENTLY in a file without .tx
CREATE INDEX ex_topup_order_idem_saved_ix ON ex_topup_order (idem_saved_at) WHERE idem_request_id IS NOT NULL;
