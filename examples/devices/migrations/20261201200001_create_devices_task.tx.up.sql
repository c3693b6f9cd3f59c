-- ex_devices_task: one row per device batch-assignment upload. It carries
-- the five-state task contract columns (pgtasks.ColumnsSQL, with the
-- constraint names prefixed so this migration owns them alone), the
-- idempotency record of the create command (pgidem.ColumnsSQL)
-- and the uploaded CSV itself. A real service would store an object-storage
-- key here and keep the bytes out of Postgres; the example keeps them inline
-- (at most 2 MiB) so it runs without object storage.
CREATE TABLE ex_devices_task (
    id                   text          PRIMARY KEY,
    owner_subject        varchar(128)  NOT NULL,
    file_name            varchar(255)  NOT NULL DEFAULT '',
    file_content         bytea         NOT NULL,
    status               smallint      NOT NULL DEFAULT 1,
    total_count          bigint        NOT NULL DEFAULT 0,
    success_count        bigint        NOT NULL DEFAULT 0,
    failed_count         bigint        NOT NULL DEFAULT 0,
    lease_owner          text          NULL,
    lease_token          bigint        NOT NULL DEFAULT 0,
    lease_expires_at     timestamptz   NULL,
    started_at           timestamptz   NULL,
    finished_at          timestamptz   NULL,
    updated_at           timestamptz   NOT NULL DEFAULT now(),
    created_at           timestamptz   NOT NULL DEFAULT now(),
    error_code           varchar(64)   NULL,
    error_message        text          NULL,
    idem_principal       varchar(128),
    idem_operation       varchar(64),
    idem_request_id      varchar(128),
    idem_fingerprint     varchar(80),
    idem_result_ref      varchar(128),
    idem_response_status int,
    idem_response_body   bytea,
    idem_response_content_type varchar(128),
    CONSTRAINT ex_devices_task_file_size_ck CHECK (octet_length(file_content) BETWEEN 1 AND 2097152),
    CONSTRAINT ex_devices_task_status_ck CHECK (status BETWEEN 1 AND 5),
    CONSTRAINT ex_devices_task_counts_non_negative_ck CHECK (total_count >= 0 AND success_count >= 0 AND failed_count >= 0),
    CONSTRAINT ex_devices_task_counts_within_total_ck CHECK (success_count + failed_count <= total_count),
    CONSTRAINT ex_devices_task_completed_counts_ck CHECK (status <> 3 OR success_count + failed_count = total_count),
    CONSTRAINT ex_devices_task_lease_when_processing_ck CHECK ((status = 2) = (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL)),
    CONSTRAINT ex_devices_task_idem_uq UNIQUE (idem_principal, idem_operation, idem_request_id)
);

-- The partial index the expired-lease sweep (pgtasks.Store.RecoverExpired) scans.
CREATE INDEX ex_devices_task_expiring_idx ON ex_devices_task (lease_expires_at) WHERE status = 2;
