-- ex_topup_wallet is an agent's balance. Every write goes through the
-- version lock (pgidem.UpdateVersioned): version counts the writes.
CREATE TABLE ex_topup_wallet (
    agent_id      varchar(128) NOT NULL,
    balance_cents bigint       NOT NULL DEFAULT 0,
    version       bigint       NOT NULL DEFAULT 0,
    created_at    timestamptz  NOT NULL DEFAULT now(),
    updated_at    timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT ex_topup_wallet_pkey PRIMARY KEY (agent_id),
    CONSTRAINT ex_topup_wallet_balance_ck CHECK (balance_cents >= 0),
    CONSTRAINT ex_topup_wallet_version_ck CHECK (version >= 0)
);
