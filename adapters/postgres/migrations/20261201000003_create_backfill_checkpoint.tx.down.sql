-- Structure-only rollback: refused while any checkpoint is recorded.
DROP TABLE tb_backfill_checkpoint;
