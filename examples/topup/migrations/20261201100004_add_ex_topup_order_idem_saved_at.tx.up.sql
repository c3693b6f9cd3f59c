-- idem_saved_at is when the row's idempotency record was saved (stamped
-- by the DEFAULT at insert). The relay's idempotency retention clears
-- records older than IDEMPOTENCY_RETENTION (default 7 days) by it, keeping
-- the row. A stable default on ADD COLUMN is a catalog-only change (no
-- rewrite); rows already there get the migration's time, so their records
-- expire one window after this release.
ALTER TABLE ex_topup_order ADD COLUMN idem_saved_at timestamptz DEFAULT now();
