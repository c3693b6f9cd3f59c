DROP TABLE tb_periodic_command;
