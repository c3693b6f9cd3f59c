ALTER TABLE tb_audit_record DROP COLUMN origin;
