-- History's prices record feed changes too (docs/design.md §12, §17):
-- `source` 'p' a pool's copy (every row before this), 'f' a usable feed's
-- reading of the pool. history_pools keeps the last feed price recorded of
-- each pool beside its copy's, the baseline a leader that takes over diffs
-- against. (A constant default on a partitioned table is metadata only.)
ALTER TABLE history_prices ADD COLUMN IF NOT EXISTS source "char" NOT NULL DEFAULT 'p';

ALTER TABLE history_pools ADD COLUMN IF NOT EXISTS feed_price bigint;
ALTER TABLE history_pools ADD COLUMN IF NOT EXISTS feed_conf  numeric;
ALTER TABLE history_pools ADD COLUMN IF NOT EXISTS feed_expo  integer;
-- Null: no feed price recorded yet.
ALTER TABLE history_pools ADD COLUMN IF NOT EXISTS feed_at    timestamptz;
