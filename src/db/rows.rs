//! Reading typed values out of rows: NUMERIC columns selected as text and parsed
//! exactly (the cold load reads its million positions' in binary
//! instead: numeric.rs), and the pricing columns of a pool.

use tokio_postgres::Row;

use crate::domain::wad::PoolPricing;
use crate::error::{ApiError, ApiResult};

/// A NUMERIC column read as text, parsed exactly (the schema's domains keep it in range).
pub fn num<T: std::str::FromStr>(row: &Row, column: &str) -> ApiResult<T> {
    row.get::<_, &str>(column).parse().map_err(|_| {
        tracing::error!(column, "stored number out of range");
        ApiError::Internal
    })
}

/// The pricing columns of a pool row.
pub fn pool_pricing(row: &Row) -> ApiResult<PoolPricing> {
    Ok(PoolPricing {
        oracle_price: row.get("oracle_price"),
        oracle_expo: row.get("oracle_expo"),
        decimals: u8::try_from(row.get::<_, i16>("decimals")).map_err(|_| ApiError::Internal)?,
        liquidation_threshold_wad: num(row, "liquidation_threshold_wad")?,
        deposit_index_wad: num(row, "deposit_index_wad")?,
        borrow_index_wad: num(row, "borrow_index_wad")?,
    })
}
