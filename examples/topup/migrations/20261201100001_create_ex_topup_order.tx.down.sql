DROP TABLE ex_topup_order;
