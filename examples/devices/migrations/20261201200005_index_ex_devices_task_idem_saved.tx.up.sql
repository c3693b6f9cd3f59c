-- The partial index the idempotency retention (pgidem.Expirer) scans:
-- only rows that still hold a record, oldest first.
-- migrate:allow lint_index_not_concurrent: ex_devices_task is an example table with few rows; a service whose table is large builds this index with CREATE INDEX CONCURRENTLY in a file without .tx
CREATE INDEX ex_devices_task_idem_saved_ix ON ex_devices_task (idem_saved_at) WHERE idem_request_id IS NOT NULL;
