-- The position update trigger names its columns, so the health factor
-- write-back passes over it. The trigger lives in sql/functions.sql.
SELECT 1;
