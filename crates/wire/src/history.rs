//! History (docs/design.md §12): an owner's health over time, the events of
//! accounts, a pool's prices and the market, as points or buckets. Values are
//! exact decimal strings; slots, ids, counts and exponents JSON integers;
//! times RFC 3339 with milliseconds. Every answer says from when history is
//! kept (`retention_start`), and a long listing continues at `next_cursor`.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::formats::{
    DecimalText, HistoryCauseName, HistoryEventKindName, I64Text, PriceSourceName, PubkeyText,
    ResolutionName, TimeText, U64Text, WadText, time_text,
};
use lendex_domain::history::buckets::{HealthBucket, HealthPoint, MarketBucket, MarketPoint};

/// One recorded health point of an owner.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct HealthPointWire {
    #[schema(value_type = TimeText)]
    pub at: String,
    /// The largest context slot among the rows and pools the value was computed from.
    pub slot: u64,
    /// The account health factor (u128 max: no debt).
    #[schema(value_type = WadText)]
    pub health_factor_wad: String,
    /// Sum of the collateral's value, in WAD USD.
    #[schema(value_type = DecimalText)]
    pub collateral_value_wad: String,
    /// Sum of the debt's value, in WAD USD.
    #[schema(value_type = DecimalText)]
    pub debt_value_wad: String,
    #[schema(value_type = HistoryCauseName)]
    pub cause: Cow<'static, str>,
}

impl From<&HealthPoint> for HealthPointWire {
    fn from(p: &HealthPoint) -> Self {
        HealthPointWire {
            at: time_text(p.at_us),
            slot: p.slot,
            health_factor_wad: p.health_factor.to_string(),
            collateral_value_wad: p.collateral.to_string(),
            debt_value_wad: p.debt.to_string(),
            cause: p.cause.as_str().into(),
        }
    }
}

/// An owner's points of one interval.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct HealthBucketWire {
    /// The interval's start (a day's starts at UTC midnight).
    #[schema(value_type = TimeText)]
    pub start: String,
    /// Points in the interval.
    pub count: u64,
    #[schema(value_type = WadText)]
    pub first: String,
    #[schema(value_type = WadText)]
    pub min: String,
    #[schema(value_type = WadText)]
    pub max: String,
    #[schema(value_type = WadText)]
    pub last: String,
    /// The last point's values.
    #[schema(value_type = DecimalText)]
    pub collateral_value_wad: String,
    #[schema(value_type = DecimalText)]
    pub debt_value_wad: String,
    /// Some point of the interval was below 1 WAD.
    pub under_water: bool,
}

impl From<&HealthBucket> for HealthBucketWire {
    fn from(b: &HealthBucket) -> Self {
        HealthBucketWire {
            start: time_text(b.start_us),
            count: b.count,
            first: b.first.to_string(),
            min: b.min.to_string(),
            max: b.max.to_string(),
            last: b.last.to_string(),
            collateral_value_wad: b.collateral.to_string(),
            debt_value_wad: b.debt.to_string(),
            under_water: b.under_water,
        }
    }
}

/// A raw point, or a bucket (with a `resolution` other than raw).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum OwnerHistoryEntry {
    Point(HealthPointWire),
    Bucket(HealthBucketWire),
}

/// GET /api/positions/{user}/history.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct OwnerHistoryResponse {
    #[schema(value_type = PubkeyText)]
    pub owner: String,
    #[schema(value_type = TimeText)]
    pub from: String,
    #[schema(value_type = TimeText)]
    pub to: String,
    #[schema(value_type = ResolutionName)]
    pub resolution: Cow<'static, str>,
    /// The start (UTC midnight) of the oldest day still kept.
    #[schema(value_type = TimeText)]
    pub retention_start: String,
    /// The last point before `from` (null if none): where the line starts.
    pub initial: Option<HealthPointWire>,
    /// Oldest first.
    pub points: Vec<OwnerHistoryEntry>,
    /// Pass as `cursor` for the rest (null on the last page).
    pub next_cursor: Option<String>,
}

/// One event of an account.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct HistoryEventWire {
    /// Increasing with each event.
    pub id: i64,
    #[schema(value_type = HistoryEventKindName)]
    pub kind: Cow<'static, str>,
    #[schema(value_type = PubkeyText)]
    pub owner: String,
    #[schema(value_type = TimeText)]
    pub at: String,
    pub slot: u64,
    #[schema(value_type = WadText)]
    pub health_factor_before_wad: String,
    #[schema(value_type = WadText)]
    pub health_factor_after_wad: String,
    /// `liquidated` only: the pool whose debt fell, and by how much (base units).
    #[schema(value_type = Option<PubkeyText>)]
    pub debt_pool: Option<String>,
    #[schema(value_type = Option<U64Text>)]
    pub repaid: Option<String>,
    /// `liquidated` only: the pool whose collateral was seized, and how much.
    #[schema(value_type = Option<PubkeyText>)]
    pub collateral_pool: Option<String>,
    #[schema(value_type = Option<U64Text>)]
    pub seized: Option<String>,
}

/// GET /api/history/events.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct HistoryEventsResponse {
    #[schema(value_type = TimeText)]
    pub retention_start: String,
    /// Newest first.
    pub events: Vec<HistoryEventWire>,
    pub next_cursor: Option<String>,
}

/// One change of a pool's oracle (its registration is the first).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PriceWire {
    #[schema(value_type = TimeText)]
    pub at: String,
    pub slot: u64,
    #[schema(value_type = Option<I64Text>)]
    pub price: Option<String>,
    #[schema(value_type = Option<U64Text>)]
    pub conf: Option<String>,
    pub expo: Option<i32>,
    #[schema(value_type = PriceSourceName)]
    pub source: Cow<'static, str>,
}

/// GET /api/pools/{pool}/prices.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PricesResponse {
    #[schema(value_type = PubkeyText)]
    pub pool: String,
    #[schema(value_type = TimeText)]
    pub retention_start: String,
    /// Oldest first.
    pub prices: Vec<PriceWire>,
    pub next_cursor: Option<String>,
}

/// One sample of the market.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct MarketPointWire {
    #[schema(value_type = TimeText)]
    pub at: String,
    /// Owners with at least one priced position.
    pub owners: u64,
    pub owners_under_water: u64,
    /// At or above 1 WAD and below 1.1 WAD.
    pub owners_at_risk: u64,
    /// Sum of the debt value of the owners under water.
    #[schema(value_type = DecimalText)]
    pub debt_value_wad_under_water: String,
    /// Sum over owners of max(0, debt - collateral).
    #[schema(value_type = DecimalText)]
    pub bad_debt_value_wad: String,
    /// Every pool's total deposits at its oracle price (the sum of GET
    /// /api/pools/status's deposits_value_wad); null in samples recorded
    /// before the market recorded it.
    #[schema(value_type = Option<DecimalText>)]
    pub deposits_value_wad: Option<String>,
    /// Every pool's total borrows at its oracle price; null as above.
    #[schema(value_type = Option<DecimalText>)]
    pub borrows_value_wad: Option<String>,
}

impl From<&MarketPoint> for MarketPointWire {
    fn from(p: &MarketPoint) -> Self {
        MarketPointWire {
            at: time_text(p.at_us),
            owners: p.owners,
            owners_under_water: p.under_water,
            owners_at_risk: p.at_risk,
            debt_value_wad_under_water: p.debt_under_water.to_string(),
            bad_debt_value_wad: p.bad_debt.to_string(),
            deposits_value_wad: p.deposits.map(|v| v.to_string()),
            borrows_value_wad: p.borrows.map(|v| v.to_string()),
        }
    }
}

/// The market's samples of one interval: the last one's values, and the most
/// owners under water at any of them.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct MarketBucketWire {
    #[schema(value_type = TimeText)]
    pub start: String,
    pub count: u64,
    pub owners: u64,
    pub owners_under_water: u64,
    pub owners_under_water_max: u64,
    pub owners_at_risk: u64,
    #[schema(value_type = DecimalText)]
    pub debt_value_wad_under_water: String,
    #[schema(value_type = DecimalText)]
    pub bad_debt_value_wad: String,
    /// The last sample's deposits and borrows (null as in a sample).
    #[schema(value_type = Option<DecimalText>)]
    pub deposits_value_wad: Option<String>,
    #[schema(value_type = Option<DecimalText>)]
    pub borrows_value_wad: Option<String>,
}

impl From<&MarketBucket> for MarketBucketWire {
    fn from(b: &MarketBucket) -> Self {
        MarketBucketWire {
            start: time_text(b.start_us),
            count: b.count,
            owners: b.last.owners,
            owners_under_water: b.last.under_water,
            owners_under_water_max: b.under_water_max,
            owners_at_risk: b.last.at_risk,
            debt_value_wad_under_water: b.last.debt_under_water.to_string(),
            bad_debt_value_wad: b.last.bad_debt.to_string(),
            deposits_value_wad: b.last.deposits.map(|v| v.to_string()),
            borrows_value_wad: b.last.borrows.map(|v| v.to_string()),
        }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum MarketHistoryEntry {
    Point(MarketPointWire),
    Bucket(MarketBucketWire),
}

/// GET /api/history/market.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct MarketHistoryResponse {
    #[schema(value_type = TimeText)]
    pub from: String,
    #[schema(value_type = TimeText)]
    pub to: String,
    #[schema(value_type = ResolutionName)]
    pub resolution: Cow<'static, str>,
    #[schema(value_type = TimeText)]
    pub retention_start: String,
    /// The last sample before `from` (null if none).
    pub initial: Option<MarketPointWire>,
    /// Oldest first.
    pub points: Vec<MarketHistoryEntry>,
    pub next_cursor: Option<String>,
}
