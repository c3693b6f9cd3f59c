-- Structure-only rollback: the columns carry only diagnostic trace context.
ALTER TABLE tb_outbox_event DROP COLUMN trace_state, DROP COLUMN trace_parent;
