-- Lookup indexes that skip Delivering rows (issue 20). A claim moves a row
-- from Pending to Delivering and a complete from Delivering to Delivered;
-- each is a non-HOT update (status is in the partial indexes' predicates),
-- which writes one entry into every index whose predicate the new row
-- version satisfies. With the three lookups partial (status <> 2) a claim
-- writes none of them; Delivering rows are the short, lease-bounded set
-- that ix_outbox_event_delivering_lease already holds.
--
-- A lookup by aggregate, resource or correlation id that does not say
-- status <> 2 cannot use these indexes: read it from vw_outbox_event,
-- which has every column of tb_outbox_event and answers both halves from
-- an index. One statement sees one snapshot, so a row changing status
-- meanwhile is returned once.
--
-- No .tx: CREATE INDEX CONCURRENTLY builds without blocking writes and is
-- refused inside a transaction. Every statement is safe to run again
-- after a failure (a failed concurrent build leaves an INVALID index,
-- which the DROP ... IF EXISTS before it removes).
DROP INDEX CONCURRENTLY IF EXISTS ix_outbox_event_aggregate_unleased;
--bun:split
CREATE INDEX CONCURRENTLY ix_outbox_event_aggregate_unleased ON tb_outbox_event (aggregate_type, aggregate_id) WHERE status <> 2;
--bun:split
DROP INDEX CONCURRENTLY IF EXISTS ix_outbox_event_resource_unleased;
--bun:split
CREATE INDEX CONCURRENTLY ix_outbox_event_resource_unleased ON tb_outbox_event (resource_type, resource_id) WHERE status <> 2;
--bun:split
DROP INDEX CONCURRENTLY IF EXISTS ix_outbox_event_correlation_unleased;
--bun:split
CREATE INDEX CONCURRENTLY ix_outbox_event_correlation_unleased ON tb_outbox_event (correlation_id) WHERE status <> 2;
--bun:split
DROP INDEX CONCURRENTLY IF EXISTS ix_outbox_event_aggregate;
--bun:split
DROP INDEX CONCURRENTLY IF EXISTS ix_outbox_event_resource;
--bun:split
DROP INDEX CONCURRENTLY IF EXISTS ix_outbox_event_correlation;
--bun:split
-- SELECT * is expanded now: a migration that adds a column to
-- tb_outbox_event recreates this view to show it.
CREATE OR REPLACE VIEW vw_outbox_event AS
    SELECT * FROM tb_outbox_event WHERE status <> 2
    UNION ALL
    SELECT * FROM tb_outbox_event WHERE status = 2;
