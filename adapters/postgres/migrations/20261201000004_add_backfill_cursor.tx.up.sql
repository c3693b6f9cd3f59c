-- A backfill checkpoints on a stable key, never a position: last_key is the
-- text cursor (a config key, a primary key) after which the next batch
-- starts, definition_hash the fingerprint of the input set the checkpoint
-- belongs to (a finished backfill whose input set changed runs again).
ALTER TABLE tb_backfill_checkpoint
    ADD COLUMN last_key text NULL,
    ADD COLUMN definition_hash varchar(64) NULL;
