DROP TABLE ex_topup_wallet;
