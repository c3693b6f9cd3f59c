-- tb_outbox_event is the one public outbox (PRD section 4). This migration is
-- its only owner: later migrations may depend on it but never alter it.
CREATE TABLE tb_outbox_event (
    id                 bigint       GENERATED ALWAYS AS IDENTITY,
    event_id           uuid         NOT NULL,
    event_type         varchar(100) NOT NULL,
    payload_version    int          NOT NULL,
    aggregate_type     varchar(64)  NOT NULL,
    aggregate_id       varchar(128) NOT NULL,
    resource_type      varchar(64)  NOT NULL,
    resource_id        varchar(128) NOT NULL,
    business_key       varchar(256) NULL,
    request_id         varchar(128) NOT NULL,
    correlation_id     varchar(128) NOT NULL,
    payload            jsonb        NOT NULL,
    status             smallint     NOT NULL DEFAULT 1,
    retry_count        int          NOT NULL DEFAULT 0,
    next_attempt_at    timestamptz  NOT NULL DEFAULT now(),
    lease_owner        varchar(128) NULL,
    lease_token        bigint       NOT NULL DEFAULT 0,
    lease_expires_at   timestamptz  NULL,
    last_error_code    varchar(64)  NULL,
    last_error_message varchar(512) NULL,
    replay_batch_id    varchar(64)  NULL,
    replayed_by        varchar(128) NULL,
    replay_reason      varchar(512) NULL,
    replayed_at        timestamptz  NULL,
    created_at         timestamptz  NOT NULL DEFAULT now(),
    updated_at         timestamptz  NOT NULL DEFAULT now(),
    delivered_at       timestamptz  NULL,
    CONSTRAINT pk_outbox_event PRIMARY KEY (id),
    CONSTRAINT uq_outbox_event_event_id UNIQUE (event_id),
    CONSTRAINT ck_outbox_event_payload_version CHECK (payload_version >= 1),
    CONSTRAINT ck_outbox_event_payload_object CHECK (jsonb_typeof(payload) = 'object'),
    CONSTRAINT ck_outbox_event_status CHECK (status BETWEEN 1 AND 4),
    CONSTRAINT ck_outbox_event_retry_count CHECK (retry_count >= 0),
    CONSTRAINT ck_outbox_event_lease_held CHECK (status <> 2 OR (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL)),
    CONSTRAINT ck_outbox_event_delivered_at CHECK (status <> 3 OR delivered_at IS NOT NULL)
);

CREATE INDEX ix_outbox_event_pending_due ON tb_outbox_event (next_attempt_at, id) WHERE status = 1;
CREATE INDEX ix_outbox_event_delivering_lease ON tb_outbox_event (lease_expires_at) WHERE status = 2;
CREATE INDEX ix_outbox_event_failed ON tb_outbox_event (updated_at) WHERE status = 4;
CREATE INDEX ix_outbox_event_delivered_at ON tb_outbox_event (delivered_at) WHERE status = 3;
CREATE INDEX ix_outbox_event_aggregate ON tb_outbox_event (aggregate_type, aggregate_id);
CREATE INDEX ix_outbox_event_resource ON tb_outbox_event (resource_type, resource_id);
CREATE INDEX ix_outbox_event_correlation ON tb_outbox_event (correlation_id);
-- No request_id index: nothing looks events up by it, and every status
-- change is a non-HOT update that writes one entry into each full index.

-- One NOTIFY per inserting statement (not per row) wakes LISTENing relays;
-- the relay still polls, so a lost notification only delays delivery.
-- NOTIFY serialises committing transactions on a global lock, so a session
-- that values write throughput over wake-up latency (a bulk import, a
-- write-heavy service) turns it off with the setting outbox.notify = off
-- (e.g. options=-c%20outbox.notify%3Doff in its DATABASE_URL, or
-- ALTER ROLE/DATABASE ... SET outbox.notify = off); its events then wait
-- for the relay's next poll.
CREATE FUNCTION fn_outbox_event_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(current_setting('outbox.notify', true), '') <> 'off' THEN
        PERFORM pg_notify('outbox_event', '');
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER tg_outbox_event_notify
    AFTER INSERT ON tb_outbox_event
    FOR EACH STATEMENT EXECUTE FUNCTION fn_outbox_event_notify();
