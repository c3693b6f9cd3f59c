ALTER TABLE ex_topup_order DROP COLUMN IF EXISTS idem_saved_at;
