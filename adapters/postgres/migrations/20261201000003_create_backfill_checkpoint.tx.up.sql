-- tb_backfill_checkpoint records how far each named backfill got, so an
-- interrupted run resumes where it stopped. Each batch commits together with
-- its checkpoint row.
CREATE TABLE tb_backfill_checkpoint (
    name        varchar(128) NOT NULL,
    last_id     bigint       NOT NULL DEFAULT 0,
    rows_done   bigint       NOT NULL DEFAULT 0,
    batches     bigint       NOT NULL DEFAULT 0,
    finished_at timestamptz  NULL,
    created_at  timestamptz  NOT NULL DEFAULT now(),
    updated_at  timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT pk_backfill_checkpoint PRIMARY KEY (name),
    CONSTRAINT ck_backfill_checkpoint_rows_done CHECK (rows_done >= 0)
);
