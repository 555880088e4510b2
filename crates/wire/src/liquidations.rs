//! What liquidators act on (docs/design.md §8): quotes and the at-risk watch list.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::formats::{DecimalText, DirectionName, PubkeyText, U64Text, WadText};
use lendex_domain::forks::Commitment;
use lendex_domain::risk::Direction;
use lendex_domain::view_key::Oracle;

/// One quote: the owner's most profitable (debt pool, collateral pool) pair.
/// u64/u128 values are decimal strings; values are in WAD USD.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct LiquidationQuote {
    #[schema(value_type = PubkeyText)]
    pub owner: String,
    #[schema(value_type = WadText)]
    pub account_health_factor_wad: String,
    /// The health factor with collateral at price - conf and debt at price + conf.
    #[schema(value_type = WadText)]
    pub account_health_factor_conf_wad: String,
    #[schema(value_type = PubkeyText)]
    pub debt_pool: String,
    #[schema(value_type = PubkeyText)]
    pub collateral_pool: String,
    #[schema(value_type = PubkeyText)]
    pub debt_position: String,
    #[schema(value_type = PubkeyText)]
    pub collateral_position: String,
    /// What to repay, in debt-token base units.
    #[schema(value_type = U64Text)]
    pub repay_amount: String,
    /// What that seizes, in collateral-token base units.
    #[schema(value_type = U64Text)]
    pub seize_amount: String,
    #[schema(value_type = WadText)]
    pub repay_value_wad: String,
    #[schema(value_type = WadText)]
    pub seize_value_wad: String,
    /// The protocol's cut of the bonus.
    #[schema(value_type = WadText)]
    pub protocol_fee_value_wad: String,
    /// What the liquidator keeps: bonus minus the protocol's cut.
    #[schema(value_type = WadText)]
    pub profit_value_wad: String,
    /// Either pool's oracle is older than `health.max_oracle_age_seconds`.
    pub oracle_stale: bool,
    /// Provenance: the largest context slot among the rows and pools the
    /// quote was computed from (the owner's, since every position counts).
    pub slot: u64,
    /// The view the quote was computed in (docs/design.md §15): `confirmed`,
    /// or `processed` (tentative).
    #[schema(value_type = String, example = "confirmed")]
    pub commitment: Commitment,
    /// The price it values pools at (docs/design.md §17): `pool`, or `feed`.
    #[schema(value_type = String, example = "pool")]
    pub oracle: Oracle,
    /// In the feed view: the owner's pools valued at a feed that differs
    /// from the pool's own price, sorted: send UpdateOraclePrice for each,
    /// then Liquidate, in one transaction. Absent in the pool view.
    #[schema(value_type = Option<Vec<PubkeyText>>)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crank: Option<Vec<String>>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct LiquidationsResponse {
    pub liquidations: Vec<LiquidationQuote>,
}

/// An at-risk owner's liquidation price nearest its pool's current price.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct NearestLiquidation {
    #[schema(value_type = PubkeyText)]
    pub pool: String,
    #[schema(value_type = DecimalText)]
    pub price: String,
    pub expo: i32,
    #[schema(value_type = DirectionName)]
    pub direction: Direction,
    pub distance_bps: i64,
}

/// An owner close to liquidation: 1 WAD <= health factor < `below`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AtRiskAccount {
    #[schema(value_type = PubkeyText)]
    pub owner: String,
    #[schema(value_type = WadText)]
    pub account_health_factor_wad: String,
    #[schema(value_type = WadText)]
    pub account_health_factor_conf_wad: String,
    /// The owner's liquidation price nearest its pool's current price (null
    /// when no pool's price alone can take it under).
    pub nearest_liquidation: Option<NearestLiquidation>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AtRiskResponse {
    pub accounts: Vec<AtRiskAccount>,
}
