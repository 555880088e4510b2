-- Every function and trigger of the schema, as it is now, in one file.
--
-- The numbered migrations make tables, columns and indexes, once each. This
-- file is applied after them on every start (db::migrate), under the same
-- lock and in the same transaction, whenever its text differs from the copy
-- last applied: functions by CREATE OR REPLACE, triggers dropped and made
-- again. So a function has one definition to read and to change, and a
-- database of any age ends with exactly these (docs/design.md §7).

-- ---- the change log (tables feed_clock and feed_changes) ---------------------
--
-- Every replica applies the index's changes in the database's commit order and
-- sees each as it was committed. Each transaction that changes what the health
-- engine reads takes the next tick of one clock row; the row lock is held to
-- COMMIT, so ticks follow commit order with no holes (a rolled-back
-- transaction gives its tick back). The transaction logs each changed row's
-- image under its tick and NOTIFYs the tick once; replicas read the log tick
-- after tick.

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

-- ---- positions and pools into the change log ---------------------------------
--
-- Whoever writes (this replica, another, an external indexer or the operator
-- writing SQL), a change of what the engine reads is logged: 'o' a position
-- as stored, 'x' a position removed (its last image), 'p' a pool as stored,
-- 'P' a pool removed. The health factor column alone logs nothing: it is the
-- engine's own output, and logging it would loop.

CREATE OR REPLACE FUNCTION lendex_log_position() RETURNS trigger AS $$
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

CREATE OR REPLACE FUNCTION lendex_log_pool() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM lendex_log_change(OLD.cluster, 'P', to_jsonb(OLD));
        RETURN OLD;
    END IF;
    PERFORM lendex_log_change(NEW.cluster, 'p', to_jsonb(NEW));
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS positions_log_write ON positions;
CREATE TRIGGER positions_log_write
    AFTER INSERT OR DELETE ON positions
    FOR EACH ROW EXECUTE FUNCTION lendex_log_position();

-- The health engine's write-back sets health_factor_wad alone on every row of
-- every owner a price move re-scored (100,000 rows for 25,000 owners): naming
-- the columns makes PostgreSQL pass over this trigger for such an UPDATE
-- without evaluating the WHEN clause on each row.
DROP TRIGGER IF EXISTS positions_log_update ON positions;
CREATE TRIGGER positions_log_update
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
    EXECUTE FUNCTION lendex_log_position();

DROP TRIGGER IF EXISTS pools_log_write ON pools;
CREATE TRIGGER pools_log_write
    AFTER INSERT OR DELETE ON pools
    FOR EACH ROW EXECUTE FUNCTION lendex_log_pool();

-- Any change of a pool row is logged, its context slot included: the slot is
-- provenance in every event of its members, and a replica that loaded later
-- must not hold a newer slot than one that applied the log. Pools are a
-- handful of rows per sync.
DROP TRIGGER IF EXISTS pools_log_update ON pools;
CREATE TRIGGER pools_log_update
    AFTER UPDATE ON pools
    FOR EACH ROW
    WHEN (OLD.* IS DISTINCT FROM NEW.*)
    EXECUTE FUNCTION lendex_log_pool();

-- ---- feeds into the change log (table oracle_feeds, sql/0016) ---------------
--
-- A feed account's reading, as stored, is logged as 'f' whenever any of it
-- changes (its slot included: the feed view's provenance, docs/design.md §17).

CREATE OR REPLACE FUNCTION lendex_log_feed() RETURNS trigger AS $$
BEGIN
    PERFORM lendex_log_change(NEW.cluster, 'f', to_jsonb(NEW));
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS oracle_feeds_log_write ON oracle_feeds;
CREATE TRIGGER oracle_feeds_log_write
    AFTER INSERT ON oracle_feeds
    FOR EACH ROW EXECUTE FUNCTION lendex_log_feed();

DROP TRIGGER IF EXISTS oracle_feeds_log_update ON oracle_feeds;
CREATE TRIGGER oracle_feeds_log_update
    AFTER UPDATE ON oracle_feeds
    FOR EACH ROW
    WHEN (OLD.* IS DISTINCT FROM NEW.*)
    EXECUTE FUNCTION lendex_log_feed();

-- ---- touches: a re-read that changed no data ----------------------------------
--
-- A position read again with no change of its data still gets a new
-- last_synced_at and slot, which GET /api/positions/{user} serves. Logged
-- compactly, without a row image: 't' one position (address, owner, slot,
-- time); 'T' one pool's reconciliation (every position of the pool the
-- engine holds at a lower slot was stamped with this slot and time). The
-- reconciliation names its pool in the setting lendex.touch_pool, the row
-- trigger passes over that pool's rows, and one 'T' stands for them all.

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

-- ---- borrows ------------------------------------------------------------------
--
-- Position detail lists each wallet's recent borrows, which the health cache
-- keeps in memory. A write that can change that list (a borrow recorded, or
-- its status moved) is announced on lendex_borrows, so every replica forgets
-- the wallet's list. The writer connections name their replica in
-- lendex.origin, and a replica passes over its own announcements.

CREATE OR REPLACE FUNCTION lendex_notify_borrow() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('lendex_borrows', json_build_object(
        'cluster', NEW.cluster, 'owner', NEW.wallet,
        'origin', nullif(current_setting('lendex.origin', true), ''))::text);
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS tx_log_notify_borrow ON tx_log;
CREATE TRIGGER tx_log_notify_borrow
    AFTER INSERT OR UPDATE ON tx_log
    FOR EACH ROW
    WHEN (NEW.action = 'borrow')
    EXECUTE FUNCTION lendex_notify_borrow();

-- ---- history's day partitions -------------------------------------------------

-- The partitioned tables, each partition named <table>_p<YYYYMMDD>.
CREATE OR REPLACE FUNCTION lendex_history_tables() RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
    SELECT ARRAY['history_points', 'history_events', 'history_prices',
                 'history_market', 'history_market_buckets']
$$;

-- Makes the day `day`'s partition of every history table that lacks it;
-- returns how many were made. A partition is made as a table of its own and
-- then attached, which takes SHARE UPDATE EXCLUSIVE on the parent (reads and
-- writes go on) where CREATE TABLE ... PARTITION OF would take ACCESS EXCLUSIVE.
CREATE OR REPLACE FUNCTION lendex_history_make_day(day date) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    parent text;
    part   text;
    made   integer := 0;
BEGIN
    -- One maker at a time (a flush meeting a new day and the maintainer).
    PERFORM pg_advisory_xact_lock(hashtext('lendex-history-partitions'));
    FOREACH parent IN ARRAY lendex_history_tables() LOOP
        part := parent || '_p' || to_char(day, 'YYYYMMDD');
        IF to_regclass(part) IS NULL THEN
            EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                           part, parent);
            EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                           parent, part,
                           (day::timestamp AT TIME ZONE 'UTC'),
                           ((day + 1)::timestamp AT TIME ZONE 'UTC'));
            made := made + 1;
        END IF;
    END LOOP;
    RETURN made;
END
$$;

-- The history partitions: each table's, with its day; `attached` false for
-- one detached but not yet dropped, `detach_pending` for one whose concurrent
-- detach was interrupted.
CREATE OR REPLACE FUNCTION lendex_history_partitions()
RETURNS TABLE (parent text, part text, day date, attached boolean, detach_pending boolean)
LANGUAGE sql STABLE AS $$
    SELECT t.parent, c.relname::text,
           to_date(substring(c.relname from '_p([0-9]{8})$'), 'YYYYMMDD'),
           i.inhrelid IS NOT NULL, coalesce(i.inhdetachpending, false)
    FROM unnest(lendex_history_tables()) AS t(parent)
    JOIN pg_class c ON c.relname ~ ('^' || t.parent || '_p[0-9]{8}$') AND c.relkind = 'r'
    LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
$$;

-- The statements that drop every day before `keep_from`, in order: a
-- partition is detached CONCURRENTLY (outside a transaction; readers and
-- writers go on), or its interrupted detach finalized, then dropped whole.
CREATE OR REPLACE FUNCTION lendex_history_retention_statements(keep_from date)
RETURNS TABLE (statement text)
LANGUAGE sql STABLE AS $$
    SELECT s FROM (
        SELECT p.day, p.part, 1 AS step,
               CASE WHEN p.detach_pending
                    THEN format('ALTER TABLE %I DETACH PARTITION %I FINALIZE', p.parent, p.part)
                    ELSE format('ALTER TABLE %I DETACH PARTITION %I CONCURRENTLY', p.parent, p.part)
               END AS s
        FROM lendex_history_partitions() p WHERE p.day < keep_from AND p.attached
        UNION ALL
        SELECT p.day, p.part, 2, format('DROP TABLE %I', p.part)
        FROM lendex_history_partitions() p WHERE p.day < keep_from
    ) t ORDER BY day, part, step
$$;

-- ---- names retired ------------------------------------------------------------
--
-- Earlier schemas called the change-log triggers *_notify_* (they once sent a
-- NOTIFY per row); a database made then still has them under those names.
DROP TRIGGER IF EXISTS positions_notify_write ON positions;
DROP TRIGGER IF EXISTS positions_notify_update ON positions;
DROP TRIGGER IF EXISTS pools_notify_write ON pools;
DROP TRIGGER IF EXISTS pools_notify_update ON pools;
DROP FUNCTION IF EXISTS lendex_notify_position();
DROP FUNCTION IF EXISTS lendex_notify_pool();

-- ---- the processed overlay (table processed_overlay, sql/0013) ---------------
--
-- The leader lays an account over the confirmed view, or takes it back; each
-- move is kept in processed_overlay and logged under the transaction's tick.

CREATE OR REPLACE FUNCTION lendex_overlay_set(p_cluster text, p_kind "char", p_account text,
                                              p_image jsonb)
RETURNS void AS $$
BEGIN
    INSERT INTO processed_overlay (cluster, account, kind, image)
        VALUES (p_cluster, p_account, p_kind, p_image)
        ON CONFLICT (cluster, account) DO UPDATE SET kind = EXCLUDED.kind, image = EXCLUDED.image;
    PERFORM lendex_log_change(p_cluster, p_kind, p_image);
END;
$$ LANGUAGE plpgsql;

-- A pool at processed: the stored row with the chain's fields of the
-- processed write over it (its registration, symbol and decimals are the
-- index's). A pool not registered is passed over.
CREATE OR REPLACE FUNCTION lendex_overlay_pool(p_cluster text, p_account text, p_chain jsonb)
RETURNS void AS $$
DECLARE
    stored jsonb;
BEGIN
    SELECT to_jsonb(p) INTO stored FROM pools p
        WHERE p.cluster = p_cluster AND p.pool_address = p_account;
    IF stored IS NOT NULL THEN
        PERFORM lendex_overlay_set(p_cluster, 'w', p_account, stored || p_chain);
    END IF;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION lendex_overlay_retract(p_cluster text, p_account text,
                                                  p_rolled_back boolean)
RETURNS void AS $$
BEGIN
    DELETE FROM processed_overlay WHERE cluster = p_cluster AND account = p_account;
    IF FOUND THEN
        PERFORM lendex_log_change(p_cluster, 'r',
            jsonb_build_object('account', p_account, 'rolled_back', p_rolled_back));
    END IF;
END;
$$ LANGUAGE plpgsql;
