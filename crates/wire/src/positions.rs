//! Positions: a wallet's rows (docs/design.md §16.2, 4.10), their detail (2.3, 4.11),
//! their refresh (4.12), the unhealthy feed (2.4, 4.13) and its SSE events.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::formats::{PubkeyText, TxSignature, U64Text, U128Text, WadText};
use super::liquidations::LiquidationQuote;
use super::risk::LiquidationPriceWire;
use lendex_domain::forks::Commitment;
use lendex_domain::view_key::Oracle;

/// docs/design.md §16.2.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Position {
    #[schema(value_type = PubkeyText)]
    pub position_address: String,
    #[schema(value_type = PubkeyText)]
    pub pool_address: String,
    #[schema(value_type = PubkeyText)]
    pub owner: String,
    #[schema(value_type = U64Text)]
    pub deposit_shares: String,
    #[schema(value_type = U64Text)]
    pub borrow_principal: String,
    #[schema(value_type = WadText)]
    pub deposit_idx_snap: String,
    #[schema(value_type = WadText)]
    pub borrow_idx_snap: String,
    /// The owner's account-level health factor (u128 max with no debt).
    #[schema(value_type = WadText)]
    pub health_factor_wad: String,
    pub last_synced_at: DateTime<Utc>,
}

/// One of `borrow_txs` in position detail (docs/design.md §16.3): a borrow of the wallet in
/// the pool, from the transaction log.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BorrowTx {
    #[schema(value_type = TxSignature)]
    pub signature: String,
    #[schema(value_type = Option<U64Text>)]
    pub amount: Option<String>,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PositionsResponse {
    pub positions: Vec<Position>,
}

/// The body of POST /api/positions/sync; its `parse` (http::handlers::positions) reads it
/// into a typed call.
#[derive(ToSchema)]
pub struct SyncPositionRequest {
    #[schema(value_type = PubkeyText)]
    pub pool_address: String,
    /// The wallet; the position address is derived from pool and wallet.
    #[schema(value_type = PubkeyText)]
    pub user: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SyncPositionResponse {
    pub ok: bool,
    /// False when the position no longer exists on chain (the row was removed).
    pub exists: bool,
    #[schema(value_type = PubkeyText)]
    pub position_address: String,
}

/// docs/design.md §16.3.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PositionDetail {
    #[schema(value_type = PubkeyText)]
    pub pool_address: String,
    /// The pool's symbol, or "" when it has none.
    pub symbol: String,
    #[schema(value_type = U64Text)]
    pub deposit_shares: String,
    #[schema(value_type = U64Text)]
    pub borrow_principal: String,
    /// floor(deposit_shares x deposit_index / WAD)
    #[schema(value_type = U128Text)]
    pub deposit_tokens: String,
    /// ceil(borrow_principal x borrow_index / borrow_idx_snap): principal plus interest.
    #[schema(value_type = U128Text)]
    pub borrow_debt: String,
    #[schema(value_type = U64Text)]
    pub original_deposit: String,
    #[schema(value_type = U128Text)]
    pub principal: String,
    /// borrow_debt - principal.
    #[schema(value_type = U128Text)]
    pub interest: String,
    /// Fraction (0.05 is 5%).
    pub supply_apy: f64,
    pub borrow_apy: f64,
    /// Borrows of this wallet in this pool, not failed, newest first, at most 10.
    pub borrow_txs: Vec<BorrowTx>,
    /// The account-level health factor, the same on every row.
    #[schema(value_type = WadText)]
    pub health_factor_wad: String,
    /// The price of this pool at which the account crosses 1 (docs/design.md §10),
    /// or null.
    pub liquidation_price: Option<LiquidationPriceWire>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DetailResponse {
    pub positions: Vec<PositionDetail>,
}

/// docs/design.md §16.4, plus oracle freshness for liquidators.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct UnhealthyRow {
    #[schema(value_type = PubkeyText)]
    pub position_address: String,
    #[schema(value_type = PubkeyText)]
    pub pool_address: String,
    #[schema(value_type = PubkeyText)]
    pub owner: String,
    #[schema(value_type = U64Text)]
    pub deposit_shares: String,
    #[schema(value_type = U64Text)]
    pub borrow_principal: String,
    #[schema(value_type = WadText)]
    pub health_factor_wad: String,
    #[schema(value_type = WadText)]
    pub account_health_factor_wad: String,
    /// True when any pool of the account has an oracle price older than
    /// `health.max_oracle_age_seconds` (by the pool's on-chain last_update_ts).
    pub oracle_stale: bool,
    /// In the feed view (docs/design.md §17): the owner's pools valued at a
    /// feed that differs from the pool's own price, sorted. Absent in the
    /// pool view.
    #[schema(value_type = Option<Vec<PubkeyText>>)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crank: Option<Vec<String>>,
}

/// The body of GET /api/positions/unhealthy.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct UnhealthyResponse {
    pub positions: Vec<UnhealthyRow>,
}

/// The `data` of every candidate event (its SSE `id:` is `<epoch>.<sequence>`).
#[derive(Debug, Serialize)]
pub struct Candidate<'a> {
    pub owner: String,
    pub account_health_factor_wad: String,
    pub positions: &'a [UnhealthyRow],
    /// The owner's best liquidation quote (null when no pair qualifies, and on stop).
    pub liquidation: Option<&'a LiquidationQuote>,
    /// In the feed view: the owner's pools to crank, sorted (`[]` on a
    /// stop of an owner no longer held). Absent in the pool view.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crank: Option<&'a [String]>,
    /// Provenance: the largest context slot among the owner's rows and pools
    /// (on a stop for an owner with no position left, of its last state).
    pub slot: u64,
    /// The view of the stream it belongs to (docs/design.md §15, §17).
    pub commitment: Commitment,
    pub oracle: Oracle,
    /// When the service published the event (Unix milliseconds).
    pub published_at_ms: i64,
    /// Present (true) on the events of a processed stream that bring a
    /// subscriber back from writes that left the best chain.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub rolled_back: bool,
}
