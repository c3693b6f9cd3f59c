-- Back to full lookup indexes, built before the partial ones are dropped so
-- lookups never lose their index. No .tx, for CONCURRENTLY; safe to rerun.
DROP VIEW IF EXISTS vw_outbox_event;
--bun:split
DROP INDEX CONCURRENTLY IF EXISTS ix_outbox_event_aggregate;
--bun:split
CREATE INDEX CONCURRENTLY ix_outbox_event_aggregate ON tb_outbox_event (aggregate_type, aggregate_id);
--bun:split
DROP INDEX CONCURRENTLY IF EXISTS ix_outbox_event_resource;
--bun:split
CREATE INDEX CONCURRENTLY ix_outbox_event_resource ON tb_outbox_event (resource_type, resource_id);
--bun:split
DROP INDEX CONCURRENTLY IF EXISTS ix_outbox_event_correlation;
--bun:split
CREATE INDEX CONCURRENTLY ix_outbox_event_correlation ON tb_outbox_event (correlation_id);
--bun:split
DROP INDEX CONCURRENTLY IF EXISTS ix_outbox_event_aggregate_unleased;
--bun:split
DROP INDEX CONCURRENTLY IF EXISTS ix_outbox_event_resource_unleased;
--bun:split
DROP INDEX CONCURRENTLY IF EXISTS ix_outbox_event_correlation_unleased;
