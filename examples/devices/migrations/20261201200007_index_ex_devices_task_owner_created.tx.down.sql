DROP INDEX IF EXISTS ex_devices_task_owner_created_ix;
