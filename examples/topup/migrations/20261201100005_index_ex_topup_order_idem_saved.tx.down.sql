DROP INDEX IF EXISTS ex_topup_order_idem_saved_ix;
