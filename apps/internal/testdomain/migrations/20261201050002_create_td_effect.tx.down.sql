DROP TABLE td_effect;
