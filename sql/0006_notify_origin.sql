-- Announcements name the replica whose writer made them (lendex.origin), so a
-- replica passes over its own. The functions live in sql/functions.sql.
SELECT 1;
