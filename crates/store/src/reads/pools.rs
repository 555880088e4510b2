//! The index's pools as the API, the operator and the demo read them
//! (docs/design.md §4.7, §9).

use std::collections::HashSet;

use lendex_wire::pools::Pool;

use crate::error::DbResult;
use crate::handle::Store;
use crate::{queries, rows};

/// Every registered pool of `cluster`, oldest first (GET /api/pools).
pub async fn list(store: &Store, cluster: &str) -> DbResult<Vec<Pool>> {
    let session = store.session().await?;
    let client = session.client();
    let stmt = client.prepare_cached(queries::LIST_POOLS).await?;
    let rows = client.query(&stmt, &[&cluster]).await?;
    Ok(rows.iter().map(rows::pool).collect())
}

/// The addresses of the registered pools (what the unregistered list leaves out).
pub async fn addresses(store: &Store, cluster: &str) -> DbResult<HashSet<String>> {
    let session = store.session().await?;
    let client = session.client();
    let stmt = client.prepare_cached(queries::LIST_POOL_ADDRESSES).await?;
    let rows = client.query(&stmt, &[&cluster]).await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// A pool's mint and the decimals stored for it (`lendex admin repair-decimals`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredDecimals {
    pub pool_address: String,
    pub token_mint: String,
    pub decimals: i16,
}

pub async fn decimals(store: &Store, cluster: &str) -> DbResult<Vec<StoredDecimals>> {
    let session = store.session().await?;
    let client = session.client();
    let stmt = client.prepare_cached(queries::LIST_POOL_DECIMALS).await?;
    let rows = client.query(&stmt, &[&cluster]).await?;
    Ok(rows
        .iter()
        .map(|row| StoredDecimals {
            pool_address: row.get("pool_address"),
            token_mint: row.get("token_mint"),
            decimals: row.get("decimals"),
        })
        .collect())
}

/// Whether pool `pool` is registered (the one place it is asked: `registered`).
pub async fn is_registered(
    store: &Store,
    cluster: &str,
    pool: &lendex_domain::pubkey::Pubkey,
) -> DbResult<bool> {
    crate::registered::is_registered(store.pool(), cluster, pool).await
}

/// `lendex demo` on localnet: forgets the pools (and by cascade their
/// positions) and their feeds indexed from an earlier run of the local
/// chain; how many pools.
pub async fn forget_cluster(store: &Store, cluster: &str) -> DbResult<u64> {
    let session = store.session().await?;
    Ok(session
        .client()
        .execute(queries::RESET_CLUSTER_POOLS, &[&cluster])
        .await?)
}
