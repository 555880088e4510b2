//! The change log's clock (sql/0011): the database's feed epoch, the last tick
//! committed, and how far the change log was pruned. Read with the change
//! log (`change_log`) and in the same snapshot as a full load (`engine_rows`).

use crate::error::DbResult;
use crate::queries;

/// The change log's clock as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    /// Names this database's feed (fixed for its life).
    pub epoch: u64,
    /// The last tick committed.
    pub tick: u64,
    /// Ticks at or below it may be gone from the log.
    pub pruned_through: u64,
}

/// The clock alone.
pub async fn clock(client: &impl deadpool_postgres::GenericClient) -> DbResult<Clock> {
    let statement = client.prepare_cached(queries::FEED_CLOCK).await?;
    let row = client.query_one(&statement, &[]).await?;
    Ok(Clock {
        epoch: unsigned(row.get("epoch")),
        tick: unsigned(row.get("tick")),
        pruned_through: unsigned(row.get("pruned_through")),
    })
}

/// A tick or epoch as stored (bigint, never negative) as u64.
pub fn unsigned(stored: i64) -> u64 {
    u64::try_from(stored).unwrap_or(0)
}
