-- tb_system_config_pin lists the config keys running processes take from
-- their environment instead of from tb_system_config (a relay started with
-- RELAY_BATCH_SIZE set, say). Each process replaces its own rows at start
-- and every 30 s and deletes them on stop; a crashed process's rows age out
-- (the API ignores rows older than configsvc.DefaultPinTTL). The API shows
-- the pins in the config view and refuses updates of pinned keys.
CREATE TABLE tb_system_config_pin (
    config_key varchar(128) NOT NULL,
    holder     varchar(128) NOT NULL,
    source     varchar(128) NOT NULL,
    seen_at    timestamptz  NOT NULL,
    CONSTRAINT pk_system_config_pin PRIMARY KEY (config_key, holder)
);

CREATE INDEX ix_system_config_pin_holder ON tb_system_config_pin (holder);
