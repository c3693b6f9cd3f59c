-- The W3C trace context (traceparent, tracestate) of the span that wrote
-- each event, so the consumer's span can link to the request that caused
-- it however late and however often the event is delivered. A column and
-- not the payload: the payload is the business contract, and replays keep
-- the row. Nullable without a default: adding it rewrites nothing.
ALTER TABLE tb_outbox_event
    ADD COLUMN trace_parent varchar(64) NULL,
    ADD COLUMN trace_state varchar(512) NULL;
