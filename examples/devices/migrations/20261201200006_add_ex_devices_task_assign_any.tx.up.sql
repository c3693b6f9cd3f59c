-- assign_any records whether the uploader held the admin role when the
-- task was created: the worker then applies rows to any agent and over
-- devices other agents hold; false applies the agent rules (a row may
-- assign only to the uploader, and only an unassigned device or one the
-- uploader holds). A constant default on ADD COLUMN is a catalog-only
-- change; tasks created before this release get false, the safe side: an
-- unfinished admin upload's reassigning rows become failure rows, never a
-- silent overwrite.
ALTER TABLE ex_devices_task ADD COLUMN assign_any boolean NOT NULL DEFAULT false;
