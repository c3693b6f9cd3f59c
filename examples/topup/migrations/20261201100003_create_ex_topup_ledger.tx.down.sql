DROP TABLE ex_topup_ledger;
