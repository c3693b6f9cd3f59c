-- tb_system_config backs the controlled system-config shell (PRD section 7).
-- Keys are registered in code; this table only stores their current values.
CREATE TABLE tb_system_config (
    id           bigint       GENERATED ALWAYS AS IDENTITY,
    config_key   varchar(128) NOT NULL,
    config_value text         NOT NULL,
    value_type   varchar(8)   NOT NULL,
    module       varchar(64)  NOT NULL,
    description  text         NOT NULL DEFAULT '',
    readonly     boolean      NOT NULL DEFAULT false,
    version      bigint       NOT NULL DEFAULT 1,
    created_by   varchar(128) NOT NULL DEFAULT 'system',
    updated_by   varchar(128) NOT NULL DEFAULT 'system',
    created_at   timestamptz  NOT NULL DEFAULT now(),
    updated_at   timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT pk_system_config PRIMARY KEY (id),
    CONSTRAINT uq_system_config_config_key UNIQUE (config_key),
    CONSTRAINT ck_system_config_config_key CHECK (config_key ~ '^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$'),
    CONSTRAINT ck_system_config_value_type CHECK (value_type IN ('string', 'int', 'bool', 'json')),
    CONSTRAINT ck_system_config_version CHECK (version >= 1)
);

CREATE INDEX ix_system_config_module ON tb_system_config (module);
