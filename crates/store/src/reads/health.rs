//! The health check's read of the index (GET /api/health, docs/design.md §4).

use crate::error::DbResult;
use crate::handle::Store;
use crate::queries;

/// The pools and transactions indexed for `cluster` (GET /api/health).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexCounts {
    pub pools: i64,
    pub tx_log: i64,
}

pub async fn counts(store: &Store, cluster: &str) -> DbResult<IndexCounts> {
    let session = store.session().await?;
    let client = session.client();
    let stmt = client.prepare_cached(queries::HEALTH_COUNTS).await?;
    let row = client.query_one(&stmt, &[&cluster]).await?;
    Ok(IndexCounts {
        pools: row.get("pools"),
        tx_log: row.get("tx_log"),
    })
}

/// The leader's slots as it recorded them within `fresh_seconds` (a
/// follower's view of the chain), None when none is that fresh.
pub async fn leader_tip(
    store: &Store,
    cluster: &str,
    fresh_seconds: f64,
) -> DbResult<Option<crate::chain_tip::ChainTip>> {
    let session = store.session().await?;
    crate::chain_tip::read(&***session.client(), cluster, fresh_seconds).await
}
