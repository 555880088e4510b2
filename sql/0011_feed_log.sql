-- One feed across replicas (decisions §13). Every replica must apply the
-- index's changes in one order, the database's commit order, and see each
-- change as it was committed (a row read later may hold a newer change:
-- two replicas reading at different moments would compute different events).
--
-- So each transaction that changes what the health engine reads takes the
-- next tick of one clock row. The row lock is held to COMMIT, so ticks follow
-- commit order and have no holes (a rolled-back transaction gives its tick
-- back). The same transaction logs each changed row's image under its tick,
-- and NOTIFYs the tick once. Replicas read the log strictly tick after tick.
-- The epoch names this database's feed: event ids are `<epoch>.<sequence>`
-- with the sequence made of the tick, the same on every replica.

CREATE TABLE IF NOT EXISTS feed_clock (
    only_row       boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    epoch          bigint  NOT NULL,
    tick           bigint  NOT NULL DEFAULT 0,
    -- Ticks at or below it may be gone from feed_changes: a replica that has
    -- not applied them reloads everything.
    pruned_through bigint  NOT NULL DEFAULT 0
);
INSERT INTO feed_clock (epoch)
    VALUES ((extract(epoch FROM clock_timestamp()) * 1000)::bigint)
    ON CONFLICT DO NOTHING;

CREATE TABLE IF NOT EXISTS feed_changes (
    tick    bigint      NOT NULL,
    seq     bigserial,
    at      timestamptz NOT NULL DEFAULT now(),
    cluster text        NOT NULL,
    -- 'p' a pool as stored, 'P' a pool removed, 'o' a position as stored,
    -- 'x' a position removed (its last image).
    kind    "char"      NOT NULL CHECK (kind IN ('p', 'P', 'o', 'x')),
    image   jsonb       NOT NULL,
    PRIMARY KEY (tick, seq)
);

-- The tick of the calling transaction, taken on first use. Kept in a
-- transaction-local setting, so it is gone at COMMIT or ROLLBACK.
CREATE OR REPLACE FUNCTION lendex_feed_tick() RETURNS bigint AS $$
DECLARE
    held text := current_setting('lendex.feed_tick', true);
    taken bigint;
BEGIN
    IF held IS NOT NULL AND held <> '' THEN
        RETURN held::bigint;
    END IF;
    UPDATE feed_clock SET tick = tick + 1 RETURNING tick INTO taken;
    PERFORM set_config('lendex.feed_tick', taken::text, true);
    PERFORM pg_notify('lendex_feed', taken::text);
    RETURN taken;
END;
$$ LANGUAGE plpgsql;

-- Replaces the NOTIFY of 0006: the triggers of 0002, 0007 and 0008 call these.
CREATE OR REPLACE FUNCTION lendex_notify_position() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO feed_changes (tick, cluster, kind, image)
            VALUES (lendex_feed_tick(), OLD.cluster, 'x', to_jsonb(OLD));
        RETURN OLD;
    END IF;
    IF TG_OP = 'UPDATE' AND (OLD.cluster, OLD.position_address, OLD.owner)
            IS DISTINCT FROM (NEW.cluster, NEW.position_address, NEW.owner) THEN
        INSERT INTO feed_changes (tick, cluster, kind, image)
            VALUES (lendex_feed_tick(), OLD.cluster, 'x', to_jsonb(OLD));
    END IF;
    INSERT INTO feed_changes (tick, cluster, kind, image)
        VALUES (lendex_feed_tick(), NEW.cluster, 'o', to_jsonb(NEW));
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION lendex_notify_pool() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO feed_changes (tick, cluster, kind, image)
            VALUES (lendex_feed_tick(), OLD.cluster, 'P', to_jsonb(OLD));
        RETURN OLD;
    END IF;
    INSERT INTO feed_changes (tick, cluster, kind, image)
        VALUES (lendex_feed_tick(), NEW.cluster, 'p', to_jsonb(NEW));
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

-- A pool's context slot is provenance in every event of its members: a
-- replica that loaded later must not hold a newer slot than one that applied
-- the log. Only pools' (a handful of rows per sync), not positions'.
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
       OR OLD.paused IS DISTINCT FROM NEW.paused
       OR OLD.slot IS DISTINCT FROM NEW.slot)
    EXECUTE FUNCTION lendex_notify_pool();
