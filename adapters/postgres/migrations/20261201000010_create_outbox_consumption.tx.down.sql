DROP TABLE tb_outbox_consumption;
