DROP INDEX IF EXISTS ex_devices_task_idem_saved_ix;
