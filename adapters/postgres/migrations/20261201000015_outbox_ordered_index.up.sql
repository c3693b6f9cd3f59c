-- The claim finds an ordered event's predecessor (the previous ordered
-- event of its aggregate) by a backward scan of this index: one probe,
-- however long the aggregate's history. Partial, so a service that never
-- orders an event keeps an empty index and pays nothing on insert.
--
-- ix_outbox_event_ordered_pending holds the Pending ordered rows in claim
-- order, for the relay's sweep that parks the ones waiting behind their
-- predecessor (pgoutbox.Store.ParkBlocked) without reading the unordered
-- backlog; empty too for a service that orders nothing.
--
-- No .tx: CREATE INDEX CONCURRENTLY builds without blocking writes and is
-- refused inside a transaction; safe to run again after a failure.
DROP INDEX CONCURRENTLY IF EXISTS ix_outbox_event_ordered;
--bun:split
CREATE INDEX CONCURRENTLY ix_outbox_event_ordered ON tb_outbox_event (aggregate_type, aggregate_id, id) WHERE ordered;
--bun:split
DROP INDEX CONCURRENTLY IF EXISTS ix_outbox_event_ordered_pending;
--bun:split
CREATE INDEX CONCURRENTLY ix_outbox_event_ordered_pending ON tb_outbox_event (next_attempt_at, id) WHERE status = 1 AND ordered;
