-- Structure-only rollback: refused while the table holds any row.
DROP TABLE tb_system_config;
