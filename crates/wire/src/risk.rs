//! The risk lens (docs/design.md §10): a price shock's effect on the book, a pool's
//! liquidation curve, and liquidation prices.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::formats::{DecimalText, DirectionName, I64Text, PubkeyText, WadText};
use super::liquidations::LiquidationQuote;
use lendex_domain::risk::Direction;

/// One shocked pool, in the request's order.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ShockedPool {
    #[schema(value_type = PubkeyText)]
    pub pool: String,
    pub change_bps: i64,
    /// The shocked oracle price (same expo); "0" when it fell to zero or below
    /// (the pool is then unpriced).
    #[schema(value_type = DecimalText)]
    pub price: String,
    pub expo: i32,
}

/// A newly liquidatable account under the shock.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ShockedAccount {
    #[schema(value_type = PubkeyText)]
    pub owner: String,
    /// Now.
    #[schema(value_type = WadText)]
    pub account_health_factor_wad: String,
    /// At the shocked prices.
    #[schema(value_type = WadText)]
    pub shocked_health_factor_wad: String,
    /// The §8 quote at the shocked prices (null when no pair qualifies).
    pub liquidation: Option<LiquidationQuote>,
}

/// GET /api/risk/shock.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ShockResponse {
    pub shock: Vec<ShockedPool>,
    /// Owners in the index with at least one priced position.
    pub owners: u64,
    pub liquidatable_before: u64,
    pub liquidatable_after: u64,
    /// At or above 1 WAD now, below it after the shock.
    pub newly_liquidatable: u64,
    /// Sum of debt value over the owners below 1 WAD after the shock.
    #[schema(value_type = DecimalText)]
    pub debt_value_wad_liquidatable_after: String,
    /// Sum over owners of max(0, debt - collateral) at the shocked prices.
    #[schema(value_type = DecimalText)]
    pub bad_debt_value_wad_after: String,
    /// Sum of the profit of each liquidatable owner's best quote after.
    #[schema(value_type = DecimalText)]
    pub profit_value_wad_after: String,
    /// Newly liquidatable owners, lowest shocked health factor first, then owner.
    pub accounts: Vec<ShockedAccount>,
}

/// One point of a liquidation curve.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CurvePoint {
    pub change_bps: i64,
    /// The pool's price at this point ("0": unpriced).
    #[schema(value_type = DecimalText)]
    pub price: String,
    /// The pool's owners below 1 WAD at this price.
    pub liquidatable: u64,
    #[schema(value_type = DecimalText)]
    pub debt_value_wad_liquidatable: String,
    #[schema(value_type = DecimalText)]
    pub bad_debt_value_wad: String,
}

/// GET /api/risk/curve.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CurveResponse {
    #[schema(value_type = PubkeyText)]
    pub pool: String,
    /// The pool's current oracle price.
    #[schema(value_type = I64Text)]
    pub price: String,
    pub expo: i32,
    /// Owners with a position in the pool: what the points count over.
    pub owners: u64,
    pub points: Vec<CurvePoint>,
}

/// Where a position's account crosses 1 as its pool's price moves alone.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct LiquidationPriceWire {
    #[schema(value_type = DecimalText)]
    pub price: String,
    pub expo: i32,
    #[schema(value_type = DirectionName)]
    pub direction: Direction,
    /// floor((price - current) x 10000 / current): negative is a fall.
    pub distance_bps: i64,
}
