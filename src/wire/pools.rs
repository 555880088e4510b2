//! Pools: the index (spec 2.1, 4.7), registration (4.8) and refresh (4.9).

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::formats::{
    I64Text, NonceText, PubkeyText, TxSignature, U64Text, WadText, WalletSignature,
};

/// Spec 2.1, as GET /api/pools returns it (the `decimals` column is internal).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Pool {
    #[schema(value_type = PubkeyText)]
    pub pool_address: String,
    #[schema(value_type = PubkeyText)]
    pub token_mint: String,
    pub symbol: Option<String>,
    #[schema(value_type = PubkeyText)]
    pub authority: String,
    #[schema(value_type = PubkeyText)]
    pub vault: String,
    pub pool_bump: i16,
    pub authority_bump: i16,
    pub vault_bump: i16,
    pub paused: bool,
    #[schema(value_type = U64Text)]
    pub total_deposits: String,
    #[schema(value_type = U64Text)]
    pub total_borrows: String,
    #[schema(value_type = U64Text)]
    pub accumulated_fees: String,
    #[schema(value_type = WadText)]
    pub ltv_wad: String,
    #[schema(value_type = WadText)]
    pub liquidation_threshold_wad: String,
    #[schema(value_type = WadText)]
    pub liquidation_bonus_wad: String,
    #[schema(value_type = WadText)]
    pub protocol_liq_fee_wad: String,
    #[schema(value_type = WadText)]
    pub reserve_factor_wad: String,
    #[schema(value_type = WadText)]
    pub close_factor_wad: String,
    #[schema(value_type = WadText)]
    pub base_rate_wad: String,
    #[schema(value_type = WadText)]
    pub optimal_util_wad: String,
    #[schema(value_type = WadText)]
    pub slope1_wad: String,
    #[schema(value_type = WadText)]
    pub slope2_wad: String,
    pub flash_fee_bps: i32,
    /// i64 as a decimal string; null until the oracle is set.
    #[schema(value_type = Option<I64Text>)]
    pub oracle_price: Option<String>,
    /// u64 as a decimal string; null until the oracle is set.
    #[schema(value_type = Option<U64Text>)]
    pub oracle_conf: Option<String>,
    pub oracle_expo: Option<i32>,
    #[schema(value_type = Option<PubkeyText>)]
    pub pyth_price_feed: Option<String>,
    #[schema(value_type = PubkeyText)]
    pub created_by: String,
    #[schema(value_type = TxSignature)]
    pub init_signature: String,
    pub last_synced_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
}

#[derive(Serialize, ToSchema)]
pub struct PoolsResponse {
    pub pools: Vec<Pool>,
}

/// The body of POST /api/pools/init; its `parse` (http::handlers::pools) reads it
/// into a typed call.
#[derive(ToSchema)]
pub struct InitPoolRequest {
    #[schema(value_type = PubkeyText)]
    pub actor: String,
    #[schema(value_type = NonceText)]
    pub nonce: String,
    /// Base58 ed25519 signature of the message for `init_pool:<token_mint>`.
    #[schema(value_type = WalletSignature)]
    pub signature: String,
    /// PDA(["pool", token_mint]).
    #[schema(value_type = PubkeyText)]
    pub pool_address: String,
    #[schema(value_type = PubkeyText)]
    pub token_mint: String,
    #[schema(max_length = 32)]
    pub symbol: Option<String>,
    /// Equals the actor and the on-chain authority.
    #[schema(value_type = PubkeyText)]
    pub authority: String,
    #[schema(value_type = PubkeyText)]
    pub vault: String,
    pub pool_bump: u8,
    pub authority_bump: u8,
    pub vault_bump: u8,
    /// Signature of the on-chain initialisation transaction.
    #[schema(value_type = TxSignature)]
    pub init_signature: String,
}

#[derive(Serialize, ToSchema)]
pub struct InitPoolResponse {
    pub ok: bool,
    #[schema(value_type = PubkeyText)]
    pub pool_address: String,
    /// False when the pool was already registered (nothing changed).
    pub created: bool,
    /// The pool's symbol as stored: on a re-registration, the first one (a
    /// symbol sent again is not applied).
    pub symbol: Option<String>,
}

/// A pool account as read from chain, checked: what a registration of it
/// sends (GET /api/pools/{address}/chain).
#[derive(Serialize, ToSchema)]
pub struct PoolOnChain {
    #[schema(value_type = PubkeyText)]
    pub pool_address: String,
    #[schema(value_type = PubkeyText)]
    pub token_mint: String,
    /// The pool's on-chain authority: the one wallet that may register it.
    #[schema(value_type = PubkeyText)]
    pub authority: String,
    #[schema(value_type = PubkeyText)]
    pub vault: String,
    pub pool_bump: u8,
    pub authority_bump: u8,
    pub vault_bump: u8,
    /// Already in the index of this cluster.
    pub registered: bool,
}

/// The body of POST /api/pools/sync; its `parse` (http::handlers::pools) reads it
/// into a typed call.
#[derive(ToSchema)]
pub struct SyncPoolRequest {
    #[schema(value_type = PubkeyText)]
    pub pool_address: String,
    /// Fills the symbol only while the stored one is null.
    #[schema(max_length = 32)]
    pub symbol: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct SyncPoolResponse {
    pub ok: bool,
    #[schema(value_type = PubkeyText)]
    pub pool_address: String,
}

/// One pool's token and oracle, as the health engine holds them (GET
/// /api/pools/status): what a front end needs to show amounts and to trust a
/// price.
#[derive(Serialize, ToSchema)]
pub struct PoolStatus {
    #[schema(value_type = PubkeyText)]
    pub pool_address: String,
    pub symbol: Option<String>,
    /// Token decimals: base units / 10^decimals is the token amount.
    pub decimals: u8,
    /// i64 as a decimal string; null until the oracle is set.
    #[schema(value_type = Option<I64Text>)]
    pub oracle_price: Option<String>,
    pub oracle_expo: Option<i32>,
    /// The pool's on-chain last update (Unix seconds).
    pub oracle_updated_at: i64,
    /// Seconds since then, at this answer.
    pub oracle_age_seconds: i64,
    /// Older than `health.max_oracle_age_seconds` (quotes are flagged).
    pub oracle_stale: bool,
    /// The context slot of the chain read the pool's row holds.
    pub slot: u64,
}

#[derive(Serialize, ToSchema)]
pub struct PoolStatusResponse {
    pub max_oracle_age_seconds: i64,
    pub pools: Vec<PoolStatus>,
}
