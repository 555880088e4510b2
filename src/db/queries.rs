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

/// Adding a pubkey that has a row re-activates and updates it (decisions §6).
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

macro_rules! audit_select {
    ($where:literal) => {
        concat!(
            "SELECT id, actor, action, target, details, created_at FROM audit_log ",
            $where,
            " ORDER BY id DESC LIMIT $1"
        )
    };
}
pub const AUDIT_LIST: &str = audit_select!("");
pub const AUDIT_LIST_BY_ACTOR: &str = audit_select!("WHERE actor = $2");
pub const AUDIT_LIST_BY_ACTION: &str = audit_select!("WHERE action = $2");
pub const AUDIT_LIST_BY_ACTOR_ACTION: &str = audit_select!("WHERE actor = $2 AND action = $3");

// ---- nonces -------------------------------------------------------------------

/// Serialises nonce issue per wallet, so the cap of live nonces is exact.
pub const LOCK_WALLET_NONCES: &str = "SELECT pg_advisory_xact_lock(hashtextextended($1, 7))";

pub const ISSUE_NONCE: &str = "INSERT INTO auth_nonces (pubkey, nonce, action, expires_at)
    VALUES ($1, $2, $3, clock_timestamp() + $4::bigint * interval '1 millisecond')
    RETURNING expires_at";

/// Keeps the newest `$2` nonces of a wallet (the oldest are dropped).
pub const TRIM_WALLET_NONCES: &str = "DELETE FROM auth_nonces WHERE pubkey = $1 AND nonce IN (
    SELECT nonce FROM auth_nonces WHERE pubkey = $1
    ORDER BY created_at DESC, nonce DESC OFFSET $2)";

/// The single-use step of spec 5.2: one atomic DELETE bound to wallet, nonce,
/// action and expiry. Of two concurrent uses, only one gets the row back.
pub const CONSUME_NONCE: &str = "DELETE FROM auth_nonces
    WHERE pubkey = $1 AND nonce = $2 AND action = $3 AND expires_at > clock_timestamp()
    RETURNING nonce";

pub const PURGE_EXPIRED_NONCES: &str =
    "DELETE FROM auth_nonces WHERE expires_at <= clock_timestamp()";

// ---- transactions -------------------------------------------------------------

/// Idempotent on signature: a repeat updates status and error_msg only.
pub const UPSERT_TX: &str = "INSERT INTO tx_log
        (cluster, signature, pool_address, wallet, action, amount, status, error_msg)
    VALUES ($1, $2, $3, $4, $5, $6::text::numeric, $7, $8)
    ON CONFLICT (signature) DO UPDATE SET status = EXCLUDED.status, error_msg = EXCLUDED.error_msg
    RETURNING id";

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
