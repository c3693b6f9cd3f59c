-- Structure-only rollback: `migrate down` refuses to run this while the
-- table holds any row.
DROP TRIGGER tg_outbox_event_notify ON tb_outbox_event;
DROP FUNCTION fn_outbox_event_notify();
DROP TABLE tb_outbox_event;
