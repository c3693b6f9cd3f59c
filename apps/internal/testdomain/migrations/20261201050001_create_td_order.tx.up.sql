-- td_order is one order of the foundation's test-only domain
-- (apps/internal/testdomain). status: 1 created, 2 applied (the td-apply
-- consumer moves 1 -> 2 once). The idem_* columns are the create's
-- idempotency record (pgidem.ColumnsSQL).
CREATE TABLE td_order (
    id                   text         NOT NULL,
    owner                varchar(128) NOT NULL,
    amount               bigint       NOT NULL,
    note                 text         NOT NULL DEFAULT '',
    status               smallint     NOT NULL DEFAULT 1,
    created_at           timestamptz  NOT NULL DEFAULT now(),
    updated_at           timestamptz  NOT NULL DEFAULT now(),
    idem_principal       varchar(128),
    idem_operation       varchar(64),
    idem_request_id      varchar(128),
    idem_fingerprint     varchar(80),
    idem_result_ref      varchar(128),
    idem_response_status int,
    idem_response_body   bytea,
    idem_response_content_type varchar(128),
    idem_saved_at        timestamptz  DEFAULT now(),
    CONSTRAINT td_order_pkey PRIMARY KEY (id),
    CONSTRAINT td_order_amount_ck CHECK (amount > 0),
    CONSTRAINT td_order_status_ck CHECK (status IN (1, 2)),
    CONSTRAINT td_order_idem_uq UNIQUE (idem_principal, idem_operation, idem_request_id)
);

CREATE INDEX td_order_idem_saved_ix ON td_order (idem_saved_at) WHERE idem_request_id IS NOT NULL;
