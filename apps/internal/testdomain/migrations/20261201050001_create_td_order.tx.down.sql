DROP TABLE td_order;
