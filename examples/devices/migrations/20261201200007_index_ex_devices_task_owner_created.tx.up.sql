-- The index the upload rate quota (devices.upload.per_minute) counts by:
-- a principal's tasks created in the last minute.
-- migrate:allow lint_index_not_concurrent: ex_devices_task is an example table with few rows; a service whose table is large builds this index with CREATE INDEX CONCURRENTLY in a file without .tx
CREATE INDEX ex_devices_task_owner_created_ix ON ex_devices_task (owner_subject, created_at);
