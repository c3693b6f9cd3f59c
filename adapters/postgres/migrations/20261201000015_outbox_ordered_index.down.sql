-- No .tx, for CONCURRENTLY; safe to rerun.
DROP INDEX CONCURRENTLY IF EXISTS ix_outbox_event_ordered;
--bun:split
DROP INDEX CONCURRENTLY IF EXISTS ix_outbox_event_ordered_pending;
