-- not_before delays an event: the relay leaves it alone until then
-- (outbox.NewParams.NotBefore). NULL for an event due at created_at, so
-- the column needs no backfill and adding it rewrites nothing. Delivery
-- lag and backlog ages count from GREATEST(created_at, not_before).
ALTER TABLE tb_outbox_event ADD COLUMN not_before timestamptz;
-- vw_outbox_event (20261201000009) expanded SELECT * when it was made:
-- recreate it so it shows the new column.
CREATE OR REPLACE VIEW vw_outbox_event AS
    SELECT * FROM tb_outbox_event WHERE status <> 2
    UNION ALL
    SELECT * FROM tb_outbox_event WHERE status = 2;
