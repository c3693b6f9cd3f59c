-- ex_topup_order is one top-up order. status: 1 created (waiting for the
-- credit), 2 credited; the relay's consumer moves 1 -> 2 exactly once. The
-- idem_* columns are the idempotency record of the create command
-- (pgidem.ColumnsSQL); their unique constraint decides between
-- concurrent first requests with the same key.
CREATE TABLE ex_topup_order (
    id                   text         NOT NULL,
    agent_id             varchar(128) NOT NULL,
    amount_cents         bigint       NOT NULL,
    channel              varchar(16)  NOT NULL,
    status               smallint     NOT NULL DEFAULT 1,
    pay_url              text         NOT NULL,
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
    CONSTRAINT ex_topup_order_pkey PRIMARY KEY (id),
    CONSTRAINT ex_topup_order_amount_ck CHECK (amount_cents > 0),
    CONSTRAINT ex_topup_order_channel_ck CHECK (channel IN ('wechat', 'alipay')),
    CONSTRAINT ex_topup_order_status_ck CHECK (status IN (1, 2)),
    CONSTRAINT ex_topup_order_idem_uq UNIQUE (idem_principal, idem_operation, idem_request_id)
);

CREATE INDEX ex_topup_order_agent_ix ON ex_topup_order (agent_id, created_at);
