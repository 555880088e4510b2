//! Every SQL statement the service runs, by name. Nothing is assembled from
//! strings at run time: an optional filter is its own named query, so each one
//! gets its own plan and its own index.
//!
//! u64/u128 columns are NUMERIC; they cross the wire as text (`::text` out,
//! `$n::text::numeric` in), so no value is ever rounded through a float.

// ---- migrations ---------------------------------------------------------------

pub const CREATE_MIGRATIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())";
pub const MIGRATION_APPLIED: &str = "SELECT 1 FROM schema_migrations WHERE version = $1";
pub const RECORD_MIGRATION: &str = "INSERT INTO schema_migrations (version) VALUES ($1)";
/// The digest of the sql/functions.sql last applied (one row).
pub const CREATE_FUNCTIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_functions (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    digest text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())";
pub const FUNCTIONS_DIGEST: &str = "SELECT digest FROM schema_functions";
pub const RECORD_FUNCTIONS_DIGEST: &str = "INSERT INTO schema_functions (digest) VALUES ($1)
    ON CONFLICT (only_row) DO UPDATE SET digest = EXCLUDED.digest, applied_at = now()";

// ---- admins -------------------------------------------------------------------

/// Adds the bootstrap super-admin, or re-activates it; returns a row only when
/// something changed (so the audit entry is written once).
pub const BOOTSTRAP_SUPER_ADMIN: &str = "INSERT INTO pool_admins (pubkey, role, label, added_by)
    VALUES ($1, 'super_admin', 'bootstrap', 'system')
    ON CONFLICT (pubkey) DO UPDATE
        SET role = 'super_admin', label = 'bootstrap', added_by = 'system', revoked_at = NULL
        WHERE pool_admins.revoked_at IS NOT NULL OR pool_admins.role <> 'super_admin'
    RETURNING pubkey";

pub const ACTIVE_ADMIN_ROLE: &str =
    "SELECT role FROM pool_admins WHERE pubkey = $1 AND revoked_at IS NULL";

pub const LIST_ACTIVE_ADMINS: &str = "SELECT pubkey, role, label, added_by, created_at, revoked_at
    FROM pool_admins WHERE revoked_at IS NULL ORDER BY created_at, pubkey";

pub const LIST_ALL_ADMINS: &str = "SELECT pubkey, role, label, added_by, created_at, revoked_at
    FROM pool_admins ORDER BY created_at, pubkey";

/// Adding a pubkey that has a row re-activates and updates it (docs/design.md §4.4).
pub const UPSERT_ADMIN: &str = "INSERT INTO pool_admins (pubkey, role, label, added_by)
    VALUES ($1, $2, $3, $4)
    ON CONFLICT (pubkey) DO UPDATE
        SET role = EXCLUDED.role, label = EXCLUDED.label, added_by = EXCLUDED.added_by,
            revoked_at = NULL";

pub const REVOKE_ADMIN: &str = "UPDATE pool_admins SET revoked_at = now()
    WHERE pubkey = $1 AND revoked_at IS NULL RETURNING pubkey";

// ---- audit --------------------------------------------------------------------

pub const INSERT_AUDIT: &str =
    "INSERT INTO audit_log (actor, action, target, details) VALUES ($1, $2, $3, $4)";

/// INSERT_AUDIT for many entries; ids follow the arrays' order.
pub const INSERT_AUDITS: &str = "INSERT INTO audit_log (actor, action, target, details)
    SELECT t.actor, t.action, t.target, t.details
    FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[]) WITH ORDINALITY
        AS t(actor, action, target, details, n)
    ORDER BY t.n";

/// UPSERT_ADMIN for many distinct wallets.
pub const UPSERT_ADMINS: &str = "INSERT INTO pool_admins (pubkey, role, label, added_by)
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
    ON CONFLICT (pubkey) DO UPDATE
        SET role = EXCLUDED.role, label = EXCLUDED.label, added_by = EXCLUDED.added_by,
            revoked_at = NULL";

/// Audit entries newest first: id below $2 (paging), created in [$3, $4),
/// at most $1; each variant adds one filter ($5, $6 in the order actor, action).
macro_rules! audit_select {
    ($where:literal) => {
        concat!(
            "SELECT id, actor, action, target, details, created_at FROM audit_log ",
            "WHERE id < $2 AND created_at >= $3 AND created_at < $4 ",
            $where,
            " ORDER BY id DESC LIMIT $1"
        )
    };
}
pub const AUDIT_LIST: &str = audit_select!("");
pub const AUDIT_LIST_BY_ACTOR: &str = audit_select!("AND actor = $5");
pub const AUDIT_LIST_BY_ACTION: &str = audit_select!("AND action = $5");
pub const AUDIT_LIST_BY_ACTOR_ACTION: &str = audit_select!("AND actor = $5 AND action = $6");

// ---- nonces -------------------------------------------------------------------

/// Serialises nonce issue per wallet, so the cap of live nonces is exact.
/// The ingester lease (actors::leader_lease): a session-level advisory lock
/// named by `$1`; taking it again in the same session nests.
pub const LEASE_TRY_LOCK: &str = "SELECT pg_try_advisory_lock(hashtextextended($1, 0))";
pub const LEASE_UNLOCK: &str = "SELECT pg_advisory_unlock(hashtextextended($1, 0))";

pub const LOCK_WALLET_NONCES: &str = "SELECT pg_advisory_xact_lock(hashtextextended($1, 7))";

pub const ISSUE_NONCE: &str = "INSERT INTO auth_nonces (pubkey, nonce, action, expires_at)
    VALUES ($1, $2, $3, clock_timestamp() + $4::bigint * interval '1 millisecond')
    RETURNING expires_at";

/// Keeps the newest `$2` nonces of a wallet (the oldest are dropped).
pub const TRIM_WALLET_NONCES: &str = "DELETE FROM auth_nonces WHERE pubkey = $1 AND nonce IN (
    SELECT nonce FROM auth_nonces WHERE pubkey = $1
    ORDER BY created_at DESC, nonce DESC OFFSET $2)";

/// The single-use step of docs/design.md §5.2: one atomic DELETE bound to wallet, nonce,
/// action and expiry. Of two concurrent uses, only one gets the row back.
pub const CONSUME_NONCE: &str = "DELETE FROM auth_nonces
    WHERE pubkey = $1 AND nonce = $2 AND action = $3 AND expires_at > clock_timestamp()
    RETURNING nonce";

/// LOCK_WALLET_NONCES for every wallet of `$1`, in one order (no deadlock
/// between replicas issuing for overlapping wallets).
pub const LOCK_WALLETS_NONCES: &str = "SELECT pg_advisory_xact_lock(hashtextextended(w, 7))
    FROM (SELECT DISTINCT w FROM unnest($1::text[]) AS w ORDER BY w) AS wallets";

/// ISSUE_NONCE for many: ($1 wallets, $2 nonces, $3 actions), lifetime $4 ms.
pub const ISSUE_NONCES: &str = "INSERT INTO auth_nonces (pubkey, nonce, action, expires_at)
    SELECT t.pubkey, t.nonce, t.action, clock_timestamp() + $4::bigint * interval '1 millisecond'
    FROM unnest($1::text[], $2::text[], $3::text[]) AS t(pubkey, nonce, action)
    RETURNING nonce, expires_at";

/// TRIM_WALLET_NONCES for every wallet of `$1`: each keeps its newest `$2`.
pub const TRIM_WALLETS_NONCES: &str = "DELETE FROM auth_nonces a
    USING (SELECT pubkey, nonce, row_number() OVER (PARTITION BY pubkey
                  ORDER BY created_at DESC, nonce DESC) AS newest
           FROM auth_nonces WHERE pubkey = ANY($1::text[])) AS r
    WHERE a.pubkey = r.pubkey AND a.nonce = r.nonce AND r.newest > $2";

/// CONSUME_NONCE for many ($1 wallets, $2 nonces, $3 actions): each matching
/// row is deleted once and returned once, however often the batch names it.
pub const CONSUME_NONCES: &str = "DELETE FROM auth_nonces a
    USING unnest($1::text[], $2::text[], $3::text[]) AS u(pubkey, nonce, action)
    WHERE a.pubkey = u.pubkey AND a.nonce = u.nonce AND a.action = u.action
      AND a.expires_at > clock_timestamp()
    RETURNING a.pubkey, a.nonce, a.action";

pub const PURGE_EXPIRED_NONCES: &str =
    "DELETE FROM auth_nonces WHERE expires_at <= clock_timestamp()";

// ---- transactions -------------------------------------------------------------

/// Idempotent on signature: a repeat updates status and error_msg only.
pub const UPSERT_TX: &str = "INSERT INTO tx_log
        (cluster, signature, pool_address, wallet, action, amount, status, error_msg)
    VALUES ($1, $2, $3, $4, $5, $6::text::numeric, $7, $8)
    ON CONFLICT (signature) DO UPDATE SET status = EXCLUDED.status, error_msg = EXCLUDED.error_msg
    RETURNING id";

/// UPSERT_TX for many rows at once (the writer's batch form); signatures are
/// distinct. `amount` travels as text, like UPSERT_TX's.
pub const UPSERT_TX_MANY: &str = "INSERT INTO tx_log
        (cluster, signature, pool_address, wallet, action, amount, status, error_msg)
    SELECT $1, t.signature, t.pool_address, t.wallet, t.action, t.amount::numeric, t.status, t.error_msg
    FROM UNNEST($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
        AS t(signature, pool_address, wallet, action, amount, status, error_msg)
    ON CONFLICT (signature) DO UPDATE SET status = EXCLUDED.status, error_msg = EXCLUDED.error_msg
    RETURNING id, signature";

macro_rules! tx_select {
    ($where:literal) => {
        concat!(
            "SELECT id, signature, pool_address, wallet, action, amount::text AS amount, status,
                    error_msg, created_at
             FROM tx_log WHERE cluster = $1 ",
            $where,
            " ORDER BY id DESC LIMIT $2"
        )
    };
}
pub const TX_LIST: &str = tx_select!("");
pub const TX_LIST_BY_WALLET: &str = tx_select!("AND wallet = $3");
pub const TX_LIST_BY_POOL: &str = tx_select!("AND pool_address = $3");
pub const TX_LIST_BY_WALLET_POOL: &str = tx_select!("AND wallet = $3 AND pool_address = $4");

// ---- pools --------------------------------------------------------------------

macro_rules! pool_columns {
    () => {
        "pool_address, token_mint, symbol, authority, vault, pool_bump, authority_bump,
         vault_bump, decimals, paused, total_deposits::text AS total_deposits,
         total_borrows::text AS total_borrows, accumulated_fees::text AS accumulated_fees,
         total_deposit_shares::text AS total_deposit_shares,
         deposit_index_wad::text AS deposit_index_wad, borrow_index_wad::text AS borrow_index_wad,
         last_update_ts, ltv_wad::text AS ltv_wad,
         liquidation_threshold_wad::text AS liquidation_threshold_wad,
         liquidation_bonus_wad::text AS liquidation_bonus_wad,
         protocol_liq_fee_wad::text AS protocol_liq_fee_wad,
         reserve_factor_wad::text AS reserve_factor_wad, close_factor_wad::text AS close_factor_wad,
         base_rate_wad::text AS base_rate_wad, optimal_util_wad::text AS optimal_util_wad,
         slope1_wad::text AS slope1_wad, slope2_wad::text AS slope2_wad, flash_fee_bps,
         oracle_price, oracle_conf::text AS oracle_conf, oracle_expo, pyth_price_feed,
         created_by, init_signature, slot, oracle_observed_at, last_synced_at, created_at"
    };
}

pub const LIST_POOLS: &str = concat!(
    "SELECT ",
    pool_columns!(),
    " FROM pools WHERE cluster = $1 ORDER BY created_at, pool_address"
);

pub const GET_POOL: &str = concat!(
    "SELECT ",
    pool_columns!(),
    " FROM pools WHERE cluster = $1 AND pool_address = $2"
);

// ---- health -------------------------------------------------------------------

pub const HEALTH_COUNTS: &str = "SELECT
    (SELECT count(*) FROM pools WHERE cluster = $1) AS pools,
    (SELECT count(*) FROM tx_log WHERE cluster = $1) AS tx_log";

/// A row when pool $2 is registered in cluster $1.
pub const POOL_IS_REGISTERED: &str = "SELECT 1 FROM pools WHERE cluster = $1 AND pool_address = $2";

/// The owner and pool of an indexed position.
pub const POSITION_HOLDER: &str =
    "SELECT owner, pool_address FROM positions WHERE cluster = $1 AND position_address = $2";
/// A registered pool's stored symbol (a re-registration reports it).
pub const POOL_SYMBOL: &str = "SELECT symbol FROM pools WHERE cluster = $1 AND pool_address = $2";

pub const LIST_POOL_ADDRESSES: &str = "SELECT pool_address, token_mint FROM pools WHERE cluster = $1 ORDER BY created_at, pool_address";

// The columns of a position as the health engine reads it, by position in
// db/engine_rows.rs (`col`), the NUMERIC ones in binary (db/numeric.rs): a cold
// start reads a million. The position writes return the same columns.
macro_rules! engine_position_columns {
    () => {
        "position_address, pool_address, owner, deposit_shares, borrow_principal,
         deposit_idx_snap, borrow_idx_snap, original_deposit, health_factor_wad,
         last_synced_at, slot"
    };
}

// The columns of a pool as the health engine reads it (db/engine_rows.rs): the
// cache's selects and the pool writes' RETURNING.
macro_rules! engine_pool_columns {
    () => {
        "pool_address, symbol, oracle_price, oracle_expo, decimals,
         liquidation_threshold_wad::text AS liquidation_threshold_wad,
         deposit_index_wad::text AS deposit_index_wad, borrow_index_wad::text AS borrow_index_wad,
         base_rate_wad::text AS base_rate_wad, optimal_util_wad::text AS optimal_util_wad,
         slope1_wad::text AS slope1_wad, slope2_wad::text AS slope2_wad,
         reserve_factor_wad::text AS reserve_factor_wad,
         total_deposits::text AS total_deposits, total_borrows::text AS total_borrows,
         last_update_ts, close_factor_wad::text AS close_factor_wad,
         liquidation_bonus_wad::text AS liquidation_bonus_wad,
         protocol_liq_fee_wad::text AS protocol_liq_fee_wad, oracle_conf::text AS oracle_conf,
         pyth_price_feed, slot"
    };
}

// Pool chain state, shared by register and sync: $1 cluster, $2 pool_address,
// $3 paused, $4..$7 totals, $8 $9 indexes, $10 last_update_ts, $11..$20 ratios,
// $21 flash_fee_bps, $22..$25 oracle, $26 slot, $27 symbol.

/// Registration (POST /api/pools/init): idempotent on the pool; returns the row
/// (as the engine reads it) only when this call created it. $28.. are the
/// identity fields.
pub const REGISTER_POOL: &str = concat!("INSERT INTO pools (cluster, pool_address, paused,
        total_deposits, total_borrows, accumulated_fees, total_deposit_shares,
        deposit_index_wad, borrow_index_wad, last_update_ts,
        ltv_wad, liquidation_threshold_wad, liquidation_bonus_wad, protocol_liq_fee_wad,
        reserve_factor_wad, close_factor_wad, base_rate_wad, optimal_util_wad, slope1_wad, slope2_wad,
        flash_fee_bps, oracle_price, oracle_conf, oracle_expo, pyth_price_feed, slot, symbol,
        token_mint, authority, vault, pool_bump, authority_bump, vault_bump, decimals,
        created_by, init_signature, oracle_observed_at)
    VALUES ($1, $2, $3, $4::text::numeric, $5::text::numeric, $6::text::numeric, $7::text::numeric,
        $8::text::numeric, $9::text::numeric, $10,
        $11::text::numeric, $12::text::numeric, $13::text::numeric, $14::text::numeric,
        $15::text::numeric, $16::text::numeric, $17::text::numeric, $18::text::numeric,
        $19::text::numeric, $20::text::numeric,
        $21, $22, $23::text::numeric, $24, $25, $26, $27,
        $28, $29, $30, $31, $32, $33, $34, $35, $36,
        CASE WHEN $22::bigint IS NULL THEN NULL ELSE now() END)
    ON CONFLICT (cluster, pool_address) DO NOTHING
    RETURNING ", engine_pool_columns!());

/// Sync: refreshes the chain state unless the row holds a newer read; the given
/// symbol only fills a null one; the oracle observation time moves when the price
/// does. Returns the row as the engine reads it, when written. `$version` is
/// what the row's write_version becomes, `$guard` when the row may be written.
macro_rules! pool_state_update {
    ($version:literal, $guard:literal) => {
        concat!(
            "UPDATE pools SET paused = $3,
        total_deposits = $4::text::numeric, total_borrows = $5::text::numeric,
        accumulated_fees = $6::text::numeric, total_deposit_shares = $7::text::numeric,
        deposit_index_wad = $8::text::numeric, borrow_index_wad = $9::text::numeric,
        last_update_ts = $10,
        ltv_wad = $11::text::numeric, liquidation_threshold_wad = $12::text::numeric,
        liquidation_bonus_wad = $13::text::numeric, protocol_liq_fee_wad = $14::text::numeric,
        reserve_factor_wad = $15::text::numeric, close_factor_wad = $16::text::numeric,
        base_rate_wad = $17::text::numeric, optimal_util_wad = $18::text::numeric,
        slope1_wad = $19::text::numeric, slope2_wad = $20::text::numeric,
        flash_fee_bps = $21,
        oracle_observed_at = CASE WHEN pools.oracle_price IS DISTINCT FROM $22::bigint
                                  THEN CASE WHEN $22::bigint IS NULL THEN NULL ELSE now() END
                                  ELSE pools.oracle_observed_at END,
        oracle_price = $22, oracle_conf = $23::text::numeric, oracle_expo = $24, pyth_price_feed = $25,
        slot = $26, symbol = COALESCE(pools.symbol, $27), last_synced_at = now(),
        write_version = ",
            $version,
            "
    WHERE cluster = $1 AND pool_address = $2 AND ",
            $guard,
            "
    RETURNING ",
            engine_pool_columns!()
        )
    };
}

/// The pool's chain state read at slot $26, unless the row holds a newer read.
/// A read (write version $28 null) counts as the newest write of its slot; a
/// streamed write ($28 its write version) goes only over an older slot or an
/// older write of the same slot (docs/design.md §14).
pub const UPDATE_POOL_STATE: &str = pool_state_update!(
    "$28",
    "(slot < $26 OR (slot = $26 AND ($28::bigint IS NULL OR write_version < $28)))"
);
/// The same for the background reconciliation: only over an older read. A
/// read of the same slot already stored came from a targeted read (a
/// notification, an on-demand sync) made no earlier than the bulk one; on a
/// chain whose state changes within a slot (surfpool) the bulk read may be the
/// older of the two.
pub const UPDATE_POOL_STATE_CATCH_UP: &str = pool_state_update!("NULL", "slot < $26");

pub const SET_POOL_DECIMALS: &str =
    "UPDATE pools SET decimals = $3 WHERE cluster = $1 AND pool_address = $2";

// ---- feeds (docs/design.md §17) ------------------------------------------------

/// The upsert of a feed account's reading ($1 cluster, $2 address, $3 status,
/// $4..$8 price, conf, exponent, publish time, posted slot, $9 slot, $10
/// write version), refused when the row holds a newer read (`$guard`).
macro_rules! feed_upsert {
    ($guard:literal) => {
        concat!(
            "INSERT INTO oracle_feeds (cluster, feed_address, status, price, conf, exponent,
        publish_time, posted_slot, slot, write_version)
    VALUES ($1, $2, $3, $4, $5::text::numeric, $6, $7, $8::text::numeric, $9, $10)
    ON CONFLICT (cluster, feed_address) DO UPDATE SET
        status = EXCLUDED.status, price = EXCLUDED.price, conf = EXCLUDED.conf,
        exponent = EXCLUDED.exponent, publish_time = EXCLUDED.publish_time,
        posted_slot = EXCLUDED.posted_slot, slot = EXCLUDED.slot,
        write_version = EXCLUDED.write_version, read_at = now()
    WHERE ",
            $guard,
            " RETURNING 1"
        )
    };
}

/// A feed read or streamed write, as UPDATE_POOL_STATE rules.
pub const UPSERT_ORACLE_FEED: &str = feed_upsert!(
    "oracle_feeds.slot < EXCLUDED.slot OR (oracle_feeds.slot = EXCLUDED.slot
        AND (EXCLUDED.write_version IS NULL OR oracle_feeds.write_version < EXCLUDED.write_version))"
);
/// The background reconciliation's: only over an older read.
pub const UPSERT_ORACLE_FEED_CATCH_UP: &str = feed_upsert!("oracle_feeds.slot < EXCLUDED.slot");

/// The columns a feed reading is read back with (`engine_rows::feed_reading`).
macro_rules! feed_columns {
    () => {
        "feed_address, status, price, conf::text AS conf, exponent, publish_time,
         posted_slot::text AS posted_slot, slot"
    };
}

/// Every feed of cluster $1 (a load).
pub const CACHE_ALL_FEEDS: &str = concat!(
    "SELECT ",
    feed_columns!(),
    " FROM oracle_feeds WHERE cluster = $1"
);

/// The feed readings of ticks in ($1, $2] of cluster $3, each with its tick.
pub const FEED_ORACLE_CHANGES: &str = concat!(
    "SELECT l.tick AS change_tick, ",
    feed_columns!(),
    " FROM feed_changes l, jsonb_populate_record(NULL::oracle_feeds, l.image) r
    WHERE l.tick > $1 AND l.tick <= $2 AND l.cluster = $3 AND l.kind = 'f'
    ORDER BY l.tick, l.seq"
);

// ---- positions ----------------------------------------------------------------

/// The upsert of a position read, refused when the row holds a newer read
/// (`$guard`, over the stored `positions` and the `EXCLUDED` read).
macro_rules! position_upsert {
    ($insert:literal, $guard:literal) => {
        concat!(
            $insert,
            "
    ON CONFLICT (cluster, position_address) DO UPDATE SET
        pool_address = EXCLUDED.pool_address, owner = EXCLUDED.owner,
        deposit_shares = EXCLUDED.deposit_shares, borrow_principal = EXCLUDED.borrow_principal,
        deposit_idx_snap = EXCLUDED.deposit_idx_snap, borrow_idx_snap = EXCLUDED.borrow_idx_snap,
        original_deposit = EXCLUDED.original_deposit, slot = EXCLUDED.slot,
        write_version = EXCLUDED.write_version, last_synced_at = now()
    WHERE ",
            $guard
        )
    };
}

/// Upserts one position read at slot $10 (with write version $11 when it was
/// streamed), unless the row holds a newer read or write (as UPDATE_POOL_STATE
/// rules); returns the row as the engine reads it, when written.
pub const UPSERT_POSITION: &str = concat!(
    position_upsert!(
        "INSERT INTO positions (cluster, position_address, pool_address,
        owner, deposit_shares, borrow_principal, deposit_idx_snap, borrow_idx_snap, original_deposit, slot,
        write_version)
    VALUES ($1, $2, $3, $4, $5::text::numeric, $6::text::numeric, $7::text::numeric,
        $8::text::numeric, $9::text::numeric, $10, $11)",
        "positions.slot < EXCLUDED.slot OR (positions.slot = EXCLUDED.slot
        AND (EXCLUDED.write_version IS NULL OR positions.write_version < EXCLUDED.write_version))"
    ),
    " RETURNING ",
    engine_position_columns!()
);

/// The same for many positions at once (background reconciliation), from
/// parallel arrays; only over older reads (see UPDATE_POOL_STATE_CATCH_UP).
/// Answers one row with `written` (how many were upserted), joined with each
/// written row whose data changed (new, or other amounts, owner or pool), as
/// the engine reads it: a reconcile re-stamps every row with its slot, and
/// only the changes are news. (The `before` CTE sees the table as it was.)
pub const UPSERT_POSITIONS_BULK: &str = concat!(
    "WITH incoming AS (
        SELECT a, o, ds::numeric AS ds, bp::numeric AS bp, dis::numeric AS dis,
               bis::numeric AS bis, od::numeric AS od
        FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])
            AS t(a, o, ds, bp, dis, bis, od)),
    before AS (
        SELECT p.position_address, p.pool_address, p.owner, p.deposit_shares, p.borrow_principal,
               p.deposit_idx_snap, p.borrow_idx_snap, p.original_deposit
        FROM positions p JOIN incoming i ON p.position_address = i.a
        WHERE p.cluster = $1),
    written AS (",
    position_upsert!(
        "INSERT INTO positions (cluster, position_address, pool_address,
        owner, deposit_shares, borrow_principal, deposit_idx_snap, borrow_idx_snap, original_deposit, slot)
    SELECT $1, a, $2, o, ds, bp, dis, bis, od, $3 FROM incoming",
        "positions.slot < EXCLUDED.slot"
    ),
    " RETURNING ",
    engine_position_columns!(),
    "),
    changed AS (
        SELECT w.* FROM written w LEFT JOIN before b ON b.position_address = w.position_address
        WHERE b.position_address IS NULL
           OR (b.pool_address, b.owner, b.deposit_shares, b.borrow_principal, b.deposit_idx_snap,
               b.borrow_idx_snap, b.original_deposit)
              IS DISTINCT FROM
              (w.pool_address, w.owner, w.deposit_shares, w.borrow_principal, w.deposit_idx_snap,
               w.borrow_idx_snap, w.original_deposit))
    SELECT changed.*, counted.written
    FROM (SELECT count(*) AS written FROM written) counted LEFT JOIN changed ON true"
);

/// A reconciliation's rows of pool $1 log no touch each (sql/0012)...
pub const BEGIN_POOL_TOUCH: &str = "SELECT lendex_begin_pool_touch($1)";
/// ...but one for the pool ($1 cluster, $2 pool, $3 slot), when $4 says the
/// upsert stamped any row.
pub const END_POOL_TOUCH: &str = "SELECT lendex_end_pool_touch($1, $2, $3, $4)";

/// Removes a position closed on chain, unless the row holds a newer read.
pub const DELETE_POSITION: &str = "DELETE FROM positions
    WHERE cluster = $1 AND position_address = $2 AND slot <= $3 RETURNING owner";

/// Removes the positions of a pool that a full scan at slot $3 no longer found.
pub const PRUNE_POOL_POSITIONS: &str = "DELETE FROM positions
    WHERE cluster = $1 AND pool_address = $2 AND slot < $3 AND NOT (position_address = ANY($4::text[]))
    RETURNING owner, position_address";

// ---- addresses ----------------------------------------------------------------

/// What the index knows address $2 of cluster $1 as, the first that holds
/// (rank): a listed pool; a position account (its pool and owner); a wallet
/// holding a position, or with recorded history. No row: unknown. Each arm is
/// one primary-key or leading-column index probe.
pub const LOOKUP_ADDRESS: &str = "SELECT kind, pool, owner FROM (
        SELECT 1 AS rank, 'pool' AS kind, pool_address AS pool, NULL::text AS owner
        FROM pools WHERE cluster = $1 AND pool_address = $2
        UNION ALL
        SELECT 2, 'position', pool_address, owner
        FROM positions WHERE cluster = $1 AND position_address = $2
        UNION ALL
        (SELECT 3, 'wallet', NULL, owner
         FROM positions WHERE cluster = $1 AND owner = $2 LIMIT 1)
        UNION ALL
        SELECT 4, 'wallet', NULL, owner
        FROM history_owners WHERE cluster = $1 AND owner = $2
    ) found ORDER BY rank LIMIT 1";

// ---- health-factor cache ----------------------------------------------------------

macro_rules! cache_pool_select {
    ($where:literal) => {
        concat!(
            "SELECT ",
            engine_pool_columns!(),
            " FROM pools WHERE cluster = $1 ",
            $where
        )
    };
}
pub const CACHE_ALL_POOLS: &str = cache_pool_select!("");

macro_rules! cache_position_select {
    ($where:literal) => {
        concat!(
            "SELECT ",
            engine_position_columns!(),
            " FROM positions WHERE cluster = $1 ",
            $where
        )
    };
}
/// One of two halves of every position, by owner (the cold load reads both at
/// once, so PostgreSQL spends two cores on it); owners never span halves.
pub const CACHE_POSITIONS_HALF: &str = cache_position_select!("AND (hashtext(owner) & 1) = $2");
pub const CACHE_OWNERS_POSITIONS: &str = cache_position_select!("AND owner = ANY($2::text[])");
/// Every position of every owner who has one in pool $2 (the eviction fallback).
pub const CACHE_POOL_OWNERS_POSITIONS: &str = cache_position_select!(
    "AND owner IN (SELECT owner FROM positions WHERE cluster = $1 AND pool_address = $2)"
);

// ---- the change log (sql/0011) ---------------------------------------------

/// The change log's clock: its epoch, the last tick committed, the pruned ticks.
pub const FEED_CLOCK: &str = "SELECT epoch, tick, pruned_through FROM feed_clock";

/// The pool changes of ticks in ($1, $2] of cluster $3 as the engine reads a
/// pool, each with its tick and kind. Both bounds given: with a range, the
/// planner expects few rows of the primary key even without statistics (with
/// `tick > $1` alone it expected a third of the table and started parallel
/// workers, 6 ms a read).
pub const FEED_POOL_CHANGES: &str = concat!(
    "SELECT l.tick AS change_tick, l.kind::text AS kind, ",
    engine_pool_columns!(),
    " FROM feed_changes l, jsonb_populate_record(NULL::pools, l.image) r
    WHERE l.tick > $1 AND l.tick <= $2 AND l.cluster = $3 AND l.kind IN ('p', 'P')
    ORDER BY l.tick, l.seq"
);

/// The position changes of ticks in ($1, $2] of cluster $3 as the engine
/// reads a position (its columns first), each with its tick and kind, at
/// most $4 of them.
pub const FEED_POSITION_CHANGES: &str = concat!(
    "SELECT ",
    engine_position_columns!(),
    ", l.tick AS change_tick, l.kind::text AS kind
    FROM feed_changes l, jsonb_populate_record(NULL::positions, l.image) r
    WHERE l.tick > $1 AND l.tick <= $2 AND l.cluster = $3 AND l.kind IN ('o', 'x')
    ORDER BY l.tick, l.seq LIMIT $4"
);

/// The next index change of this transaction takes a tick of its own
/// (sql/0011 keeps the transaction's tick in this setting).
pub const NEXT_FEED_TICK: &str = "SELECT set_config('lendex.feed_tick', '', true)";

/// The touches of ticks in ($1, $2] of cluster $3 (sql/0012): a position
/// read again with its data unchanged ('t': address, owner), or a pool's
/// reconciliation ('T': the pool), each with its slot and time; at most $4.
pub const FEED_TOUCHES: &str = "SELECT l.tick AS change_tick, l.kind::text AS kind,
        l.image->>'position_address' AS position_address, l.image->>'owner' AS owner,
        l.image->>'pool_address' AS pool_address, (l.image->>'slot')::bigint AS slot,
        (l.image->>'last_synced_at')::timestamptz AS last_synced_at
    FROM feed_changes l
    WHERE l.tick > $1 AND l.tick <= $2 AND l.cluster = $3 AND l.kind IN ('t', 'T')
    ORDER BY l.tick, l.seq LIMIT $4";

/// The first step of a prune: ticks older than $1 seconds (never the last
/// tick) are declared gone, so a replica behind them reloads; returns the
/// pruned tick, when there is one.
pub const FEED_PRUNE_MARK: &str =
    "UPDATE feed_clock SET pruned_through = greatest(pruned_through, cut.through)
    FROM (SELECT max(tick) AS through FROM feed_changes
          WHERE at < now() - make_interval(secs => $1::float8)
            AND tick < (SELECT tick FROM feed_clock)) cut
    WHERE cut.through IS NOT NULL
    RETURNING pruned_through";

/// The second step: the changes of ticks at or below $1 deleted (after the
/// mark committed; never while holding the clock, so writers do not wait).
pub const FEED_PRUNE_DELETE: &str = "DELETE FROM feed_changes WHERE tick <= $1";

/// The cache's account health factors, written back in bulk.
pub const SET_HEALTH_FACTORS: &str = "UPDATE positions p SET health_factor_wad = u.hf::numeric
    FROM unnest($2::text[], $3::text[]) AS u(owner, hf)
    WHERE p.cluster = $1 AND p.owner = u.owner AND p.health_factor_wad <> u.hf::numeric";

/// Recent borrows of a wallet, at most 10 per pool (detail's borrow_txs).
pub const RECENT_BORROWS: &str =
    "SELECT pool_address, signature, amount::text AS amount, created_at
    FROM (SELECT pool_address, signature, amount, created_at,
                 row_number() OVER (PARTITION BY pool_address ORDER BY id DESC) AS n
          FROM tx_log
          WHERE cluster = $1 AND wallet = $2 AND action = 'borrow' AND status <> 'failed'
            AND pool_address IS NOT NULL) recent
    WHERE n <= 10 ORDER BY pool_address, created_at DESC";

pub const LIST_POOL_DECIMALS: &str = "SELECT pool_address, token_mint, decimals FROM pools
    WHERE cluster = $1 ORDER BY created_at, pool_address";

/// `lendex demo` on localnet only: forget pools (and, by cascade, positions)
/// and the feeds they named, indexed from an earlier run of the local chain
/// (whose slots the new chain starts below).
pub const RESET_CLUSTER_POOLS: &str = "WITH feeds AS (DELETE FROM oracle_feeds WHERE cluster = $1)
    DELETE FROM pools WHERE cluster = $1";

// ---- the chain tip (sql/0015) ---------------------------------------------

/// The leader's slots for cluster $1: processed $2, confirmed $3.
pub const RECORD_TIP: &str =
    "INSERT INTO chain_tip (cluster, processed_slot, confirmed_slot, updated_at)
     VALUES ($1, $2, $3, now())
     ON CONFLICT (cluster) DO UPDATE
     SET processed_slot = EXCLUDED.processed_slot, confirmed_slot = EXCLUDED.confirmed_slot,
         updated_at = EXCLUDED.updated_at";

/// Cluster $1's slots, if recorded within the last $2 seconds.
pub const READ_TIP: &str = "SELECT processed_slot, confirmed_slot FROM chain_tip
     WHERE cluster = $1 AND updated_at > now() - make_interval(secs => $2)";

// The processed overlay's statements, by themselves (they grow with the
// overlay's kinds).
mod overlay;
pub use overlay::*;

mod webhooks;
pub use webhooks::*;
