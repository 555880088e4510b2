-- The health engine's write-back sets positions.health_factor_wad alone, on
-- every row of every owner a price move re-scored (100,000 rows for 25,000
-- owners). The update trigger's WHEN clause compared seven columns on each of
-- those rows to find nothing to announce: about a tenth of the statement's
-- time. Naming the columns makes PostgreSQL pass over the trigger for any
-- UPDATE that sets none of them; the WHEN clause still filters the updates
-- that set them to the same value. Nothing else changes: no BEFORE trigger
-- rewrites these columns.
DROP TRIGGER IF EXISTS positions_notify_update ON positions;
CREATE TRIGGER positions_notify_update
    AFTER UPDATE OF owner, pool_address, deposit_shares, borrow_principal,
                    deposit_idx_snap, borrow_idx_snap, original_deposit ON positions
    FOR EACH ROW
    WHEN (OLD.owner IS DISTINCT FROM NEW.owner
       OR OLD.pool_address IS DISTINCT FROM NEW.pool_address
       OR OLD.deposit_shares IS DISTINCT FROM NEW.deposit_shares
       OR OLD.borrow_principal IS DISTINCT FROM NEW.borrow_principal
       OR OLD.deposit_idx_snap IS DISTINCT FROM NEW.deposit_idx_snap
       OR OLD.borrow_idx_snap IS DISTINCT FROM NEW.borrow_idx_snap
       OR OLD.original_deposit IS DISTINCT FROM NEW.original_deposit)
    EXECUTE FUNCTION lendex_notify_position();
