-- ordered marks an event delivered in order per aggregate
-- (outbox.NewParams.Ordered): the relay claims it only when the previous
-- ordered event of its aggregate_type+aggregate_id (by id) is delivered
-- and consumed. A constant default adds the column without a rewrite.
ALTER TABLE tb_outbox_event ADD COLUMN ordered boolean NOT NULL DEFAULT false;
-- vw_outbox_event expanded SELECT * when it was made: recreate it so it
-- shows the new column.
CREATE OR REPLACE VIEW vw_outbox_event AS
    SELECT * FROM tb_outbox_event WHERE status <> 2
    UNION ALL
    SELECT * FROM tb_outbox_event WHERE status = 2;
