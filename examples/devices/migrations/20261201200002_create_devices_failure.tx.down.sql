DROP TABLE IF EXISTS ex_devices_failure;
