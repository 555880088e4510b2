-- Cache coherence: every change to a position or to a pool's pricing inputs,
-- whoever makes it, reaches every replica. This migration once made the
-- triggers that announced them; their current form (the change log) is in
-- sql/functions.sql, applied on every start.
SELECT 1;
