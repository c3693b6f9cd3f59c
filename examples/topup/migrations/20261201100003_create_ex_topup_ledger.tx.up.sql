-- ex_topup_ledger holds one entry per credited order: the unique order_id
-- is what makes a duplicate delivery of topup.created change nothing.
CREATE TABLE ex_topup_ledger (
    id           bigint       GENERATED ALWAYS AS IDENTITY,
    agent_id     varchar(128) NOT NULL,
    order_id     text         NOT NULL,
    amount_cents bigint       NOT NULL,
    event_id     varchar(64)  NOT NULL,
    created_at   timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT ex_topup_ledger_pkey PRIMARY KEY (id),
    CONSTRAINT ex_topup_ledger_order_uq UNIQUE (order_id),
    CONSTRAINT ex_topup_ledger_amount_ck CHECK (amount_cents > 0)
);

CREATE INDEX ex_topup_ledger_agent_ix ON ex_topup_ledger (agent_id, id);
