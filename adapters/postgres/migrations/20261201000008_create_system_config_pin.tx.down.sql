DROP TABLE tb_system_config_pin;
