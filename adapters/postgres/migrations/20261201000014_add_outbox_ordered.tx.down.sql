-- The view shows ordered: drop it, then the column, then make the view
-- again as 20261201000012 left it.
DROP VIEW vw_outbox_event;
ALTER TABLE tb_outbox_event DROP COLUMN ordered;
CREATE VIEW vw_outbox_event AS
    SELECT * FROM tb_outbox_event WHERE status <> 2
    UNION ALL
    SELECT * FROM tb_outbox_event WHERE status = 2;
