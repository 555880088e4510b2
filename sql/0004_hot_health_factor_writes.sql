-- The health engine rewrites positions.health_factor_wad for every owner whose
-- value moved (a price change on a busy pool touches every position in it). With
-- an index on that column each of those writes was a full new row version plus
-- index entries, which bloated the table (818 MB for 1M positions after a few
-- moves, against 368 MB compact) and slowed every later scan. No route reads the
-- index any more: the unhealthy feed, the quotes and the at-risk list are served
-- from the engine's memory. Without it, and with room left on each page, these
-- writes are heap-only (HOT) updates.
DROP INDEX IF EXISTS positions_hf_idx;
ALTER TABLE positions SET (fillfactor = 80);
