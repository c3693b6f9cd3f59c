-- tb_outbox_consumer_failure is the durable record of a consumer that gave
-- up on a delivered event (retries exhausted or a permanent error). The
-- event row itself stays Delivered: a delivered row never changes again.
-- An open failure (resolved_at IS NULL) keeps its event from the retention
-- job, and an operator replays from it. One open failure per event.
CREATE TABLE tb_outbox_consumer_failure (
    id                  bigint       GENERATED ALWAYS AS IDENTITY,
    event_id            uuid         NOT NULL,
    event_type          varchar(100) NOT NULL,
    error_code          varchar(64)  NOT NULL,
    error_message       varchar(512) NOT NULL DEFAULT '',
    failed_at           timestamptz  NOT NULL,
    replay_batch_id     varchar(64)  NULL,
    replay_requested_at timestamptz  NULL,
    resolved_at         timestamptz  NULL,
    created_at          timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT pk_outbox_consumer_failure PRIMARY KEY (id)
);

CREATE UNIQUE INDEX uq_outbox_consumer_failure_open ON tb_outbox_consumer_failure (event_id) WHERE resolved_at IS NULL;
CREATE INDEX ix_outbox_consumer_failure_failed_at ON tb_outbox_consumer_failure (failed_at);
