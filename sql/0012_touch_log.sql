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

CREATE OR REPLACE FUNCTION lendex_log_touch() RETURNS trigger AS $$
BEGIN
    PERFORM lendex_log_change(NEW.cluster, 't', jsonb_build_object(
        'position_address', NEW.position_address,
        'owner', NEW.owner,
        'slot', NEW.slot,
        'last_synced_at', NEW.last_synced_at));
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS positions_log_touch ON positions;
CREATE TRIGGER positions_log_touch
    AFTER UPDATE OF last_synced_at, slot ON positions
    FOR EACH ROW
    WHEN ((OLD.last_synced_at, OLD.slot) IS DISTINCT FROM (NEW.last_synced_at, NEW.slot)
      AND (OLD.owner, OLD.pool_address, OLD.deposit_shares, OLD.borrow_principal,
           OLD.deposit_idx_snap, OLD.borrow_idx_snap, OLD.original_deposit)
          IS NOT DISTINCT FROM
          (NEW.owner, NEW.pool_address, NEW.deposit_shares, NEW.borrow_principal,
           NEW.deposit_idx_snap, NEW.borrow_idx_snap, NEW.original_deposit)
      AND current_setting('lendex.touch_pool', true) IS DISTINCT FROM NEW.pool_address)
    EXECUTE FUNCTION lendex_log_touch();

-- Before a reconciliation's upsert: its rows of `pool` log nothing each.
CREATE OR REPLACE FUNCTION lendex_begin_pool_touch(pool text) RETURNS void AS $$
    SELECT NULL FROM set_config('lendex.touch_pool', pool, true);
$$ LANGUAGE sql;

-- After it: rows log themselves again, and when the upsert stamped any row,
-- one 'T' entry says which (the pool's rows held below `at_slot`).
CREATE OR REPLACE FUNCTION lendex_end_pool_touch(
    p_cluster text, pool text, at_slot bigint, stamped boolean) RETURNS void AS $$
BEGIN
    PERFORM set_config('lendex.touch_pool', '', true);
    IF stamped THEN
        PERFORM lendex_log_change(p_cluster, 'T', jsonb_build_object(
            'pool_address', pool, 'slot', at_slot, 'last_synced_at', now()));
    END IF;
END;
$$ LANGUAGE plpgsql;
