-- Structure-only rollback: refused while any checkpoint is recorded.
ALTER TABLE tb_backfill_checkpoint DROP COLUMN definition_hash, DROP COLUMN last_key;
