-- ex_devices_assignment: the business fact, one row per device: which agent
-- it is assigned to and which task row assigned it last. Applying a row is
-- an upsert on device_sn, so applying it again changes nothing.
CREATE TABLE ex_devices_assignment (
    device_sn   varchar(32)   PRIMARY KEY,
    agent_id    varchar(64)   NOT NULL,
    task_id     text          NOT NULL,
    row_no      int           NOT NULL,
    updated_at  timestamptz   NOT NULL
);

CREATE INDEX ex_devices_assignment_task_idx ON ex_devices_assignment (task_id);
