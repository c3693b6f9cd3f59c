DROP TABLE tb_audit_record;
