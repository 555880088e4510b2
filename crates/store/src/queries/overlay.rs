//! The processed overlay's statements (sql/0013, functions in
//! sql/functions.sql), named as the rest of `queries`.

/// Lays an account over the confirmed view: $1 cluster, $2 kind ('v' a
/// position, 'c' a position closed, 'g' a feed's reading), $3 account, $4
/// its image.
pub const OVERLAY_SET: &str = "SELECT lendex_overlay_set($1, $2::text::\"char\", $3, $4::jsonb)";

/// Lays a pool over: $1 cluster, $2 pool, $3 the chain's fields of the write.
pub const OVERLAY_POOL: &str = "SELECT lendex_overlay_pool($1, $2, $3::jsonb)";

/// Takes an account back: $1 cluster, $2 account, $3 rolled back (its slot
/// was abandoned, or the best chain moved to another fork).
pub const OVERLAY_RETRACT: &str = "SELECT lendex_overlay_retract($1, $2, $3)";

/// Every account the overlay holds of cluster $1.
pub const OVERLAY_ACCOUNTS: &str = "SELECT account FROM processed_overlay WHERE cluster = $1";

/// The overlay's positions of ticks in ($1, $2] of cluster $3, as the engine
/// reads a position (its columns first), each with its tick and place; at
/// most $4.
pub const FEED_OVERLAY_POSITIONS: &str = concat!(
    "SELECT ",
    engine_position_columns!(),
    ", l.tick AS change_tick, l.seq AS change_seq
    FROM feed_changes l, jsonb_populate_record(NULL::positions, l.image) r
    WHERE l.tick > $1 AND l.tick <= $2 AND l.cluster = $3 AND l.kind = 'v'
    ORDER BY l.tick, l.seq LIMIT $4"
);

/// The overlay's pools of ticks in ($1, $2] of cluster $3.
pub const FEED_OVERLAY_POOLS: &str = concat!(
    "SELECT l.tick AS change_tick, l.seq AS change_seq, ",
    engine_pool_columns!(),
    " FROM feed_changes l, jsonb_populate_record(NULL::pools, l.image) r
    WHERE l.tick > $1 AND l.tick <= $2 AND l.cluster = $3 AND l.kind = 'w'
    ORDER BY l.tick, l.seq"
);

/// The overlay's feed readings of ticks in ($1, $2] of cluster $3.
pub const FEED_OVERLAY_FEEDS: &str = concat!(
    "SELECT l.tick AS change_tick, l.seq AS change_seq, ",
    feed_columns!(),
    " FROM feed_changes l, jsonb_populate_record(NULL::oracle_feeds, l.image) r
    WHERE l.tick > $1 AND l.tick <= $2 AND l.cluster = $3 AND l.kind = 'g'
    ORDER BY l.tick, l.seq"
);

/// The overlay's closed positions and retractions of ticks in ($1, $2] of
/// cluster $3; at most $4.
pub const FEED_OVERLAY_MARKS: &str = "SELECT l.tick AS change_tick, l.seq AS change_seq,
        l.kind::text AS kind, l.image->>'account' AS account,
        l.image->>'position_address' AS position_address, l.image->>'owner' AS owner,
        (l.image->>'slot')::bigint AS slot, (l.image->>'rolled_back')::boolean AS rolled_back
    FROM feed_changes l
    WHERE l.tick > $1 AND l.tick <= $2 AND l.cluster = $3 AND l.kind IN ('c', 'r')
    ORDER BY l.tick, l.seq LIMIT $4";

/// What the overlay of cluster $1 holds now: its positions as the engine
/// reads them.
pub const OVERLAY_POSITIONS: &str = concat!(
    "SELECT ",
    engine_position_columns!(),
    " FROM processed_overlay o, jsonb_populate_record(NULL::positions, o.image) r
    WHERE o.cluster = $1 AND o.kind = 'v'"
);

/// ... its pools.
pub const OVERLAY_POOLS: &str = concat!(
    "SELECT ",
    engine_pool_columns!(),
    " FROM processed_overlay o, jsonb_populate_record(NULL::pools, o.image) r
    WHERE o.cluster = $1 AND o.kind = 'w'"
);

/// ... its feed readings.
pub const OVERLAY_FEEDS: &str = concat!(
    "SELECT ",
    feed_columns!(),
    " FROM processed_overlay o, jsonb_populate_record(NULL::oracle_feeds, o.image) r
    WHERE o.cluster = $1 AND o.kind = 'g'"
);

/// ... and its closed positions.
pub const OVERLAY_CLOSED: &str = "SELECT o.image->>'position_address' AS position_address,
        o.image->>'owner' AS owner, (o.image->>'slot')::bigint AS slot
    FROM processed_overlay o WHERE o.cluster = $1 AND o.kind = 'c'";
