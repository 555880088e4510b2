-- One feed across replicas (docs/design.md §13). Every replica must apply the
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

-- One changed row, logged under the calling transaction's tick.
CREATE OR REPLACE FUNCTION lendex_log_change(cluster text, kind "char", image jsonb)
RETURNS void AS $$
    INSERT INTO feed_changes (tick, cluster, kind, image)
        VALUES (lendex_feed_tick(), cluster, kind, image);
$$ LANGUAGE sql;

-- Replaces the NOTIFY of 0006: the triggers of 0002, 0007 and 0008 call these.
CREATE OR REPLACE FUNCTION lendex_notify_position() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM lendex_log_change(OLD.cluster, 'x', to_jsonb(OLD));
        RETURN OLD;
    END IF;
    IF TG_OP = 'UPDATE' AND (OLD.cluster, OLD.position_address, OLD.owner)
            IS DISTINCT FROM (NEW.cluster, NEW.position_address, NEW.owner) THEN
        PERFORM lendex_log_change(OLD.cluster, 'x', to_jsonb(OLD));
    END IF;
    PERFORM lendex_log_change(NEW.cluster, 'o', to_jsonb(NEW));
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION lendex_notify_pool() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM lendex_log_change(OLD.cluster, 'P', to_jsonb(OLD));
        RETURN OLD;
    END IF;
    PERFORM lendex_log_change(NEW.cluster, 'p', to_jsonb(NEW));
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

-- Any change of a pool row is logged, its context slot included: the slot is
-- provenance in every event of its members, and a replica that loaded later
-- must not hold a newer slot than one that applied the log. Pools are a
-- handful of rows per sync; positions keep the narrower trigger of 0008.
DROP TRIGGER IF EXISTS pools_notify_update ON pools;
CREATE TRIGGER pools_notify_update
    AFTER UPDATE ON pools
    FOR EACH ROW
    WHEN (OLD.* IS DISTINCT FROM NEW.*)
    EXECUTE FUNCTION lendex_notify_pool();
