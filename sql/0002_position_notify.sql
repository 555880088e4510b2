-- Cache coherence: any change to a position or to a pool's pricing
-- inputs, whoever makes it (this replica, another replica, an external indexer
-- or a liquidator bot writing SQL), is announced on a channel that every Lendex
-- replica LISTENs to. Writes of health_factor_wad alone are not announced: that
-- column is the cache's own output, and announcing it would loop.

CREATE OR REPLACE FUNCTION lendex_notify_position() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('lendex_positions', json_build_object(
            'cluster', OLD.cluster, 'owner', OLD.owner)::text);
        RETURN OLD;
    END IF;
    PERFORM pg_notify('lendex_positions', json_build_object(
        'cluster', NEW.cluster, 'owner', NEW.owner)::text);
    IF TG_OP = 'UPDATE' AND OLD.owner IS DISTINCT FROM NEW.owner THEN
        PERFORM pg_notify('lendex_positions', json_build_object(
            'cluster', OLD.cluster, 'owner', OLD.owner)::text);
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS positions_notify_write ON positions;
CREATE TRIGGER positions_notify_write
    AFTER INSERT OR DELETE ON positions
    FOR EACH ROW EXECUTE FUNCTION lendex_notify_position();

DROP TRIGGER IF EXISTS positions_notify_update ON positions;
CREATE TRIGGER positions_notify_update
    AFTER UPDATE ON positions
    FOR EACH ROW
    WHEN (OLD.owner IS DISTINCT FROM NEW.owner
       OR OLD.pool_address IS DISTINCT FROM NEW.pool_address
       OR OLD.deposit_shares IS DISTINCT FROM NEW.deposit_shares
       OR OLD.borrow_principal IS DISTINCT FROM NEW.borrow_principal
       OR OLD.deposit_idx_snap IS DISTINCT FROM NEW.deposit_idx_snap
       OR OLD.borrow_idx_snap IS DISTINCT FROM NEW.borrow_idx_snap
       OR OLD.original_deposit IS DISTINCT FROM NEW.original_deposit)
    EXECUTE FUNCTION lendex_notify_position();

CREATE OR REPLACE FUNCTION lendex_notify_pool() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('lendex_pools', json_build_object(
            'cluster', OLD.cluster, 'pool_address', OLD.pool_address)::text);
        RETURN OLD;
    END IF;
    PERFORM pg_notify('lendex_pools', json_build_object(
        'cluster', NEW.cluster, 'pool_address', NEW.pool_address)::text);
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS pools_notify_write ON pools;
CREATE TRIGGER pools_notify_write
    AFTER INSERT OR DELETE ON pools
    FOR EACH ROW EXECUTE FUNCTION lendex_notify_pool();

DROP TRIGGER IF EXISTS pools_notify_update ON pools;
CREATE TRIGGER pools_notify_update
    AFTER UPDATE ON pools
    FOR EACH ROW
    WHEN (OLD.oracle_price IS DISTINCT FROM NEW.oracle_price
       OR OLD.oracle_expo IS DISTINCT FROM NEW.oracle_expo
       OR OLD.decimals IS DISTINCT FROM NEW.decimals
       OR OLD.deposit_index_wad IS DISTINCT FROM NEW.deposit_index_wad
       OR OLD.borrow_index_wad IS DISTINCT FROM NEW.borrow_index_wad
       OR OLD.liquidation_threshold_wad IS DISTINCT FROM NEW.liquidation_threshold_wad
       OR OLD.total_deposits IS DISTINCT FROM NEW.total_deposits
       OR OLD.total_borrows IS DISTINCT FROM NEW.total_borrows
       OR OLD.symbol IS DISTINCT FROM NEW.symbol
       OR OLD.paused IS DISTINCT FROM NEW.paused)
    EXECUTE FUNCTION lendex_notify_pool();
