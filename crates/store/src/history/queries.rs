//! History's named statements (docs/design.md §12). As everywhere, nothing is
//! assembled at run time: each optional filter of the events list is its
//! own statement, so each gets its own plan and index.

// ---- the writer ---------------------------------------------------------------

/// A leader taking over: the cluster's writer epoch, one more than any before.
pub const TAKE_OVER: &str =
    "INSERT INTO history_writers (cluster, epoch, flushed) VALUES ($1, 1, 0)
    ON CONFLICT (cluster) DO UPDATE SET epoch = history_writers.epoch + 1, flushed = 0
    RETURNING epoch";

/// A flush's claim, in its own transaction: this epoch still writes, and this
/// batch is the next. The row stays locked until the flush commits, so a
/// takeover's epoch bump waits for it (and a later flush of the old epoch
/// finds nothing to update).
pub const CLAIM_BATCH: &str = "UPDATE history_writers SET flushed = $3
    WHERE cluster = $1 AND epoch = $2 AND flushed < $3 RETURNING flushed";

/// Why a claim found nothing: another epoch writes, or the batch is stored.
pub const WRITER_STATE: &str = "SELECT epoch, flushed FROM history_writers WHERE cluster = $1";

/// Every owner with what was last recorded of it as of the checkpoint.
pub const OWNER_BASELINES: &str = "SELECT id, owner, last_health_factor_wad, last_bad_debt, last_at
    FROM history_owners WHERE cluster = $1";

/// The time the owners' last values hold every point up to (null: never).
pub const CHECKPOINT_AT: &str = "SELECT checkpoint_at FROM history_writers WHERE cluster = $1";

/// Each owner's last point stored after the checkpoint (the block range index
/// reads only the recent blocks).
pub const POINTS_AFTER: &str = "SELECT DISTINCT ON (p.owner_id) p.owner_id, p.health_factor_wad,
        p.collateral_value_wad = 0 AND p.debt_value_wad > 0, p.at
    FROM history_points p JOIN history_owners o ON o.id = p.owner_id
    WHERE o.cluster = $1 AND p.at > $2
    ORDER BY p.owner_id, p.at DESC";

/// A checkpoint's claim: this epoch still writes; the owners' last values
/// written in the same transaction hold every point up to $3.
pub const CLAIM_CHECKPOINT: &str = "UPDATE history_writers SET checkpoint_at = $3
    WHERE cluster = $1 AND epoch = $2 RETURNING 1";

/// Owners' last recorded values, by id.
pub const SET_OWNER_BASELINES: &str = "UPDATE history_owners o
    SET last_health_factor_wad = t.hf, last_bad_debt = t.bad, last_at = t.at
    FROM unnest($1::int4[], $2::numeric[], $3::bool[], $4::timestamptz[]) AS t(id, hf, bad, at)
    WHERE o.id = t.id";

/// Every pool with its last recorded oracle.
pub const POOL_BASELINES: &str = "SELECT id, pool, last_price, last_conf, last_expo, last_at,
        feed_price, feed_conf, feed_expo, feed_at
    FROM history_pools WHERE cluster = $1";

/// Owners new to history, numbered (their last values come with a checkpoint).
pub const ADD_OWNERS: &str = "INSERT INTO history_owners (cluster, owner)
    SELECT $1, unnest($2::text[]) ON CONFLICT (cluster, owner) DO NOTHING";

pub const OWNER_IDS: &str =
    "SELECT id, owner FROM history_owners WHERE cluster = $1 AND owner = ANY($2::text[])";

/// Pools of this batch's price rows, each with its last oracle.
pub const UPSERT_POOLS: &str = "INSERT INTO history_pools
        (cluster, pool, last_price, last_conf, last_expo, last_at)
    SELECT $1, t.pool, t.price, t.conf, t.expo, t.at
    FROM unnest($2::text[], $3::int8[], $4::numeric[], $5::int4[], $6::timestamptz[])
        AS t(pool, price, conf, expo, at)
    ON CONFLICT (cluster, pool) DO UPDATE
        SET last_price = EXCLUDED.last_price, last_conf = EXCLUDED.last_conf,
            last_expo = EXCLUDED.last_expo, last_at = EXCLUDED.last_at
    RETURNING id, pool";

/// The last feed price recorded of each pool (as UPSERT_POOLS).
pub const UPSERT_POOL_FEEDS: &str = "INSERT INTO history_pools
        (cluster, pool, feed_price, feed_conf, feed_expo, feed_at)
    SELECT $1, t.pool, t.price, t.conf, t.expo, t.at
    FROM unnest($2::text[], $3::int8[], $4::numeric[], $5::int4[], $6::timestamptz[])
        AS t(pool, price, conf, expo, at)
    ON CONFLICT (cluster, pool) DO UPDATE
        SET feed_price = EXCLUDED.feed_price, feed_conf = EXCLUDED.feed_conf,
            feed_expo = EXCLUDED.feed_expo, feed_at = EXCLUDED.feed_at
    RETURNING id, pool";

pub const ADD_POOLS: &str = "INSERT INTO history_pools (cluster, pool)
    SELECT $1, unnest($2::text[]) ON CONFLICT (cluster, pool) DO NOTHING";

pub const POOL_IDS: &str =
    "SELECT id, pool FROM history_pools WHERE cluster = $1 AND pool = ANY($2::text[])";

pub const COPY_POINTS: &str = "COPY history_points
    (owner_id, cause, at, slot, health_factor_wad, collateral_value_wad, debt_value_wad)
    FROM STDIN BINARY";

/// Event ids come from the sequence, in the order the rows are copied.
pub const COPY_EVENTS: &str = "COPY history_events
    (cluster, kind, owner_id, at, slot, health_factor_before_wad, health_factor_after_wad,
     debt_pool_id, repaid, collateral_pool_id, seized, pool_ids)
    FROM STDIN BINARY";

pub const COPY_PRICES: &str =
    "COPY history_prices (pool_id, at, slot, price, conf, expo, source) FROM STDIN BINARY";

pub const INSERT_MARKET: &str = "INSERT INTO history_market
        (cluster, at, owners, owners_under_water, owners_at_risk,
         debt_value_wad_under_water, bad_debt_value_wad, deposits_value_wad, borrows_value_wad)
    SELECT $1, t.* FROM unnest($2::timestamptz[], $3::int8[], $4::int8[], $5::int8[],
        $6::numeric[], $7::numeric[], $8::numeric[], $9::numeric[]) AS t";

/// A batch's market samples merged into the stored buckets (one partial per
/// bucket: the batch's count, last sample and most under water).
pub const MERGE_MARKET_BUCKETS: &str = "INSERT INTO history_market_buckets AS b
        (cluster, resolution, start, count, last_at, owners, owners_under_water,
         owners_under_water_max, owners_at_risk, debt_value_wad_under_water, bad_debt_value_wad,
         deposits_value_wad, borrows_value_wad)
    SELECT $1, t.* FROM unnest($2::int2[], $3::timestamptz[], $4::int8[], $5::timestamptz[],
        $6::int8[], $7::int8[], $8::int8[], $9::int8[], $10::numeric[], $11::numeric[],
        $12::numeric[], $13::numeric[]) AS t
    ON CONFLICT (cluster, resolution, start) DO UPDATE SET
        count = b.count + EXCLUDED.count,
        last_at = EXCLUDED.last_at,
        owners = EXCLUDED.owners,
        owners_under_water = EXCLUDED.owners_under_water,
        owners_under_water_max = GREATEST(b.owners_under_water_max, EXCLUDED.owners_under_water_max),
        owners_at_risk = EXCLUDED.owners_at_risk,
        debt_value_wad_under_water = EXCLUDED.debt_value_wad_under_water,
        bad_debt_value_wad = EXCLUDED.bad_debt_value_wad,
        deposits_value_wad = EXCLUDED.deposits_value_wad,
        borrows_value_wad = EXCLUDED.borrows_value_wad";

// ---- partitions ---------------------------------------------------------------

pub const MAKE_DAY: &str = "SELECT lendex_history_make_day($1)";

pub const PARTITION_DAYS: &str =
    "SELECT DISTINCT day FROM lendex_history_partitions() WHERE attached";

pub const PARTITION_COUNT: &str = "SELECT count(*) FROM lendex_history_partitions()";

/// Serialises retention across maintainers (a session-level advisory lock,
/// released by RETENTION_UNLOCK or with the session).
pub const RETENTION_LOCK: &str = "SELECT pg_advisory_lock(7053394227050528000)";
pub const RETENTION_UNLOCK: &str = "SELECT pg_advisory_unlock(7053394227050528000)";

pub const RETENTION_STATEMENTS: &str =
    "SELECT statement FROM lendex_history_retention_statements($1)";

// ---- reads --------------------------------------------------------------------

pub const OWNER_ID: &str = "SELECT id FROM history_owners WHERE cluster = $1 AND owner = $2";

pub const POOL_ID: &str = "SELECT id FROM history_pools WHERE cluster = $1 AND pool = $2";

/// An owner's points with at in [$2, $3), oldest first.
pub const POINTS: &str =
    "SELECT at, slot, health_factor_wad, collateral_value_wad, debt_value_wad, cause
    FROM history_points WHERE owner_id = $1 AND at >= $2 AND at < $3 ORDER BY at LIMIT $4";

/// The same, unbounded (read as a stream, for buckets).
pub const POINTS_ALL: &str =
    "SELECT at, slot, health_factor_wad, collateral_value_wad, debt_value_wad, cause
    FROM history_points WHERE owner_id = $1 AND at >= $2 AND at < $3 ORDER BY at";

/// An owner's last point before $2.
pub const POINT_BEFORE: &str =
    "SELECT at, slot, health_factor_wad, collateral_value_wad, debt_value_wad, cause
    FROM history_points WHERE owner_id = $1 AND at < $2 ORDER BY at DESC LIMIT 1";

/// A pool's price rows with at in [$2, $3), oldest first.
pub const PRICES: &str = "SELECT at, slot, price, conf, expo, source
    FROM history_prices WHERE pool_id = $1 AND at >= $2 AND at < $3 ORDER BY at LIMIT $4";

pub const MARKET: &str = "SELECT at, owners, owners_under_water, owners_at_risk,
        debt_value_wad_under_water, bad_debt_value_wad, deposits_value_wad, borrows_value_wad
    FROM history_market WHERE cluster = $1 AND at >= $2 AND at < $3 ORDER BY at LIMIT $4";

pub const MARKET_BEFORE: &str = "SELECT at, owners, owners_under_water, owners_at_risk,
        debt_value_wad_under_water, bad_debt_value_wad, deposits_value_wad, borrows_value_wad
    FROM history_market WHERE cluster = $1 AND at < $2 ORDER BY at DESC LIMIT 1";

pub const MARKET_BUCKETS: &str = "SELECT start, count, last_at, owners, owners_under_water,
        owners_under_water_max, owners_at_risk, debt_value_wad_under_water, bad_debt_value_wad,
        deposits_value_wad, borrows_value_wad
    FROM history_market_buckets
    WHERE cluster = $1 AND resolution = $2 AND start >= $3 AND start < $4 ORDER BY start LIMIT $5";

/// Events newest first: at in [$2, $3), id below $4, at most $5; each
/// variant adds one filter ($6, $7 in the order kind, owner id, pool id).
macro_rules! events_select {
    ($where:literal) => {
        concat!(
            "SELECT e.id, e.kind, o.owner, e.at, e.slot, e.health_factor_before_wad,
                e.health_factor_after_wad, dp.pool, e.repaid, cp.pool, e.seized
            FROM history_events e
            JOIN history_owners o ON o.id = e.owner_id
            LEFT JOIN history_pools dp ON dp.id = e.debt_pool_id
            LEFT JOIN history_pools cp ON cp.id = e.collateral_pool_id
            WHERE e.cluster = $1 AND e.at >= $2 AND e.at < $3 AND e.id < $4 ",
            $where,
            " ORDER BY e.id DESC LIMIT $5"
        )
    };
}
pub const EVENTS: &str = events_select!("");
pub const EVENTS_BY_KIND: &str = events_select!("AND e.kind = $6");
pub const EVENTS_BY_OWNER: &str = events_select!("AND e.owner_id = $6");
pub const EVENTS_BY_POOL: &str = events_select!("AND e.pool_ids @> ARRAY[$6::int4]");
pub const EVENTS_BY_KIND_OWNER: &str = events_select!("AND e.kind = $6 AND e.owner_id = $7");
pub const EVENTS_BY_KIND_POOL: &str =
    events_select!("AND e.kind = $6 AND e.pool_ids @> ARRAY[$7::int4]");
pub const EVENTS_BY_OWNER_POOL: &str =
    events_select!("AND e.owner_id = $6 AND e.pool_ids @> ARRAY[$7::int4]");
pub const EVENTS_BY_KIND_OWNER_POOL: &str =
    events_select!("AND e.kind = $6 AND e.owner_id = $7 AND e.pool_ids @> ARRAY[$8::int4]");

/// The latest market sample's time (new ones come after it).
pub const LAST_MARKET_AT: &str = "SELECT max(at) FROM history_market WHERE cluster = $1";
