-- tb_audit_record keeps every audit record the foundation emits (config
-- changes and refusals, outbox replays and lease releases) until the audit
-- team's writer takes it: the relay's default consumer of audit.recorded
-- events inserts each record once (event_id), and nothing here deletes
-- them. The audit team marks what it has taken with taken_at.
CREATE TABLE tb_audit_record (
    id             bigint       GENERATED ALWAYS AS IDENTITY,
    event_id       uuid         NOT NULL,
    action         varchar(64)  NOT NULL,
    actor          varchar(128) NOT NULL,
    resource_type  varchar(64)  NOT NULL,
    resource_id    varchar(128) NOT NULL,
    outcome        varchar(16)  NOT NULL,
    code           varchar(64)  NOT NULL DEFAULT '',
    reason         text         NOT NULL DEFAULT '',
    before_value   text         NOT NULL DEFAULT '',
    after_value    text         NOT NULL DEFAULT '',
    request_id     varchar(128) NOT NULL DEFAULT '',
    correlation_id varchar(128) NOT NULL DEFAULT '',
    recorded_at    timestamptz  NOT NULL,
    taken_at       timestamptz  NULL,
    created_at     timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT pk_audit_record PRIMARY KEY (id),
    CONSTRAINT uq_audit_record_event_id UNIQUE (event_id)
);

CREATE INDEX ix_audit_record_actor ON tb_audit_record (actor, recorded_at);
CREATE INDEX ix_audit_record_resource ON tb_audit_record (resource_type, resource_id, recorded_at);
CREATE INDEX ix_audit_record_recorded_at ON tb_audit_record (recorded_at);
