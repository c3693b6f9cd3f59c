-- ex_devices_failure: the per-row failure details of a task, paged by the
-- failures endpoint. UNIQUE (task_id, row_no) makes recording a row's
-- failure idempotent, so a resumed worker never duplicates one. No foreign
-- key to ex_devices_task (PRD): task_id is kept explicitly.
CREATE TABLE ex_devices_failure (
    id          bigint        GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id     text          NOT NULL,
    row_no      int           NOT NULL,
    device_sn   varchar(64)   NOT NULL DEFAULT '',
    code        varchar(64)   NOT NULL,
    message     text          NOT NULL,
    created_at  timestamptz   NOT NULL DEFAULT now(),
    CONSTRAINT ex_devices_failure_task_row_uq UNIQUE (task_id, row_no)
);
