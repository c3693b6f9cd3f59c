-- Consumption evidence (the PRD's 消费记录): one row per event and consumer
-- that ran it to success. The worker's middleware writes it before the
-- queue is told the task is done; a consumer may also write it inside its
-- own business transaction (pgoutbox.RecordConsumption), which makes its
-- effect exactly once. The relay's reconciler publishes again a delivered
-- event that has no row here when the queue no longer holds its task, and
-- retention deletes a delivered event only once it has one.
CREATE TABLE tb_outbox_consumption (
    event_id    uuid         NOT NULL,
    consumer    varchar(100) NOT NULL,
    consumed_at timestamptz  NOT NULL,
    CONSTRAINT pk_outbox_consumption PRIMARY KEY (event_id, consumer)
);
