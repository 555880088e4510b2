//! GET /api/transactions (docs/design.md §4.11) and a wallet's recent borrows
//! (the detail's borrow_txs).

use lendex_wire::positions::BorrowTx;
use lendex_wire::transactions::Transaction;

use crate::error::DbResult;
use crate::handle::Store;
use crate::{queries, rows};

/// Which transactions: newest first, at most `limit`, of a wallet or a pool
/// or both when given.
#[derive(Debug, Clone, Copy)]
pub struct TxFilter<'a> {
    pub wallet: Option<&'a str>,
    pub pool: Option<&'a str>,
    pub limit: i64,
}

pub async fn list(store: &Store, cluster: &str, f: TxFilter<'_>) -> DbResult<Vec<Transaction>> {
    let session = store.session().await?;
    let client = session.client();
    let limit = f.limit;
    let rows = match (f.wallet, f.pool) {
        (None, None) => {
            let stmt = client.prepare_cached(queries::TX_LIST).await?;
            client.query(&stmt, &[&cluster, &limit]).await?
        }
        (Some(wallet), None) => {
            let stmt = client.prepare_cached(queries::TX_LIST_BY_WALLET).await?;
            client.query(&stmt, &[&cluster, &limit, &wallet]).await?
        }
        (None, Some(pool)) => {
            let stmt = client.prepare_cached(queries::TX_LIST_BY_POOL).await?;
            client.query(&stmt, &[&cluster, &limit, &pool]).await?
        }
        (Some(wallet), Some(pool)) => {
            let stmt = client
                .prepare_cached(queries::TX_LIST_BY_WALLET_POOL)
                .await?;
            client
                .query(&stmt, &[&cluster, &limit, &wallet, &pool])
                .await?
        }
    };
    Ok(rows.iter().map(rows::transaction).collect())
}

/// A wallet's borrows, at most 10 per pool, newest first, not failed, each
/// with its pool (docs/design.md §4.11).
pub async fn recent_borrows(
    store: &Store,
    cluster: &str,
    wallet: &str,
) -> DbResult<Vec<(String, BorrowTx)>> {
    let session = store.session().await?;
    let client = session.client();
    let stmt = client.prepare_cached(queries::RECENT_BORROWS).await?;
    let rows = client.query(&stmt, &[&cluster, &wallet]).await?;
    Ok(rows
        .iter()
        .map(|row| {
            let tx = BorrowTx {
                signature: row.get("signature"),
                amount: row.get("amount"),
                created_at: row.get("created_at"),
            };
            (row.get("pool_address"), tx)
        })
        .collect())
}
