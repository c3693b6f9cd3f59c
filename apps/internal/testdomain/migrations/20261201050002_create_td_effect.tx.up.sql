-- td_effect is what the td-apply consumer did for one order; its primary
-- key makes a second effect of the same order impossible.
CREATE TABLE td_effect (
    order_id   text         NOT NULL,
    event_id   text         NOT NULL,
    owner      varchar(128) NOT NULL,
    amount     bigint       NOT NULL,
    applied_at timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT td_effect_pkey PRIMARY KEY (order_id)
);
