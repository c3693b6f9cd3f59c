ALTER TABLE ex_devices_task DROP COLUMN IF EXISTS idem_saved_at;
