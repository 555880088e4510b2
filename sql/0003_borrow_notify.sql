-- A borrow recorded, or its status moved, is announced so every replica
-- forgets the wallet's cached borrows. The trigger lives in sql/functions.sql.
SELECT 1;
