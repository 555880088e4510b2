-- Every pool column the health engine reads announces its change (the
-- liquidation terms, the rate model, the oracle's last update included). The
-- trigger lives in sql/functions.sql.
SELECT 1;
