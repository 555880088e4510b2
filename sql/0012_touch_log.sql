-- A position read again with no change of its data (an on-demand sync, a
-- streamed write of the same bytes, the background reconciliation) still
-- gets a new last_synced_at and slot, and GET /api/positions/{user} serves
-- both, sorted by the time. The change log carried only data changes, so the
-- engine every replica answers from kept the first read's time forever.
--
-- Such a touch is now logged too, compactly and without a whole row image:
--   't'  one position: its address, owner, slot and time (a row trigger);
--   'T'  one pool's reconciliation: every position of the pool that the
--        engine holds at a lower slot was stamped with this slot and time.
-- The reconciliation stamps thousands of rows a pool every interval; its
-- statement names the pool in the setting lendex.touch_pool, the row
-- trigger passes over the rows of that pool, and one 'T' entry stands for
-- them all (lendex_end_pool_touch). A row touched so is exactly a row of the
-- pool left at a lower slot: the same transaction removes the rows the scan
-- no longer found and logs rows whose data changed in full ('o').

ALTER TABLE feed_changes DROP CONSTRAINT IF EXISTS feed_changes_kind_check;
ALTER TABLE feed_changes ADD CONSTRAINT feed_changes_kind_check
    CHECK (kind IN ('p', 'P', 'o', 'x', 't', 'T'));

-- The touch trigger and lendex_begin/end_pool_touch live in sql/functions.sql.
