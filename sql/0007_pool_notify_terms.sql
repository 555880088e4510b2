-- Every pool column the health engine reads announces its change. 0002 left
-- out the liquidation terms (close factor, bonus, protocol fee, oracle
-- confidence), the rate model and the oracle's last update: a replica that
-- did not make such a write kept quoting with the old terms, showing the old
-- APYs, and judging oracle staleness by the old timestamp. The context slot
-- alone still announces nothing (a re-read of unchanged data).

DROP TRIGGER IF EXISTS pools_notify_update ON pools;
CREATE TRIGGER pools_notify_update
    AFTER UPDATE ON pools
    FOR EACH ROW
    WHEN (OLD.oracle_price IS DISTINCT FROM NEW.oracle_price
       OR OLD.oracle_expo IS DISTINCT FROM NEW.oracle_expo
       OR OLD.oracle_conf IS DISTINCT FROM NEW.oracle_conf
       OR OLD.last_update_ts IS DISTINCT FROM NEW.last_update_ts
       OR OLD.decimals IS DISTINCT FROM NEW.decimals
       OR OLD.deposit_index_wad IS DISTINCT FROM NEW.deposit_index_wad
       OR OLD.borrow_index_wad IS DISTINCT FROM NEW.borrow_index_wad
       OR OLD.liquidation_threshold_wad IS DISTINCT FROM NEW.liquidation_threshold_wad
       OR OLD.liquidation_bonus_wad IS DISTINCT FROM NEW.liquidation_bonus_wad
       OR OLD.protocol_liq_fee_wad IS DISTINCT FROM NEW.protocol_liq_fee_wad
       OR OLD.close_factor_wad IS DISTINCT FROM NEW.close_factor_wad
       OR OLD.reserve_factor_wad IS DISTINCT FROM NEW.reserve_factor_wad
       OR OLD.base_rate_wad IS DISTINCT FROM NEW.base_rate_wad
       OR OLD.optimal_util_wad IS DISTINCT FROM NEW.optimal_util_wad
       OR OLD.slope1_wad IS DISTINCT FROM NEW.slope1_wad
       OR OLD.slope2_wad IS DISTINCT FROM NEW.slope2_wad
       OR OLD.total_deposits IS DISTINCT FROM NEW.total_deposits
       OR OLD.total_borrows IS DISTINCT FROM NEW.total_borrows
       OR OLD.symbol IS DISTINCT FROM NEW.symbol
       OR OLD.paused IS DISTINCT FROM NEW.paused)
    EXECUTE FUNCTION lendex_notify_pool();
