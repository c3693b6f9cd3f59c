ALTER TABLE ex_devices_task DROP COLUMN IF EXISTS assign_any;
