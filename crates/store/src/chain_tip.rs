//! The leader's slots for the followers (docs/design.md §15): the leader's
//! source alone knows the best chain's tip and the highest confirmed slot;
//! it records them here as they move, and a follower reads them for health.

use deadpool_postgres::Transaction;
use futures_util::future::BoxFuture;
use tokio_postgres::GenericClient;

use crate::error::DbResult;
use crate::queries;
use crate::writes::{Lane, WriteCommand};

/// The slots the leader's source reported last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainTip {
    pub processed: Option<u64>,
    pub confirmed: Option<u64>,
}

/// Overwrites the cluster's tip (the leader's only).
#[derive(Debug, Clone)]
pub struct RecordTip {
    pub cluster: &'static str,
    pub tip: ChainTip,
}

impl WriteCommand for RecordTip {
    type Output = ();
    const LANE: Lane = Lane::Index;

    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<()>> {
        Box::pin(async move {
            let slot = |s: Option<u64>| s.and_then(|s| i64::try_from(s).ok());
            let stmt = tx.prepare_cached(queries::RECORD_TIP).await?;
            let (processed, confirmed) = (slot(self.tip.processed), slot(self.tip.confirmed));
            tx.execute(&stmt, &[&self.cluster, &processed, &confirmed])
                .await?;
            Ok(())
        })
    }
}

/// The cluster's tip, if the leader recorded one within `fresh_seconds` (an
/// older one is a leader gone, not a tip).
pub async fn read(
    client: &impl GenericClient,
    cluster: &str,
    fresh_seconds: f64,
) -> DbResult<Option<ChainTip>> {
    let row = client
        .query_opt(queries::READ_TIP, &[&cluster, &fresh_seconds])
        .await?;
    let slot = |v: Option<i64>| v.and_then(|s| u64::try_from(s).ok());
    Ok(row.map(|row| ChainTip {
        processed: slot(row.get("processed_slot")),
        confirmed: slot(row.get("confirmed_slot")),
    }))
}
