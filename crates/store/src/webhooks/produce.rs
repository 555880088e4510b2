//! The producer's reads and writes (docs/design.md §18): the active
//! webhooks every replica judges with, the cursor of stored changes, and
//! the deliveries a leader stores past it in one transaction with it.

use std::collections::HashSet;

use deadpool_postgres::Pool;

use crate::error::DbResult;
use crate::queries;
use lendex_domain::pubkey::Pubkey;
use lendex_domain::webhooks::judge::Filter;

/// The active webhooks of `cluster`.
pub async fn filters(pool: &Pool, cluster: &str) -> DbResult<Vec<Filter>> {
    let client = pool.get().await?;
    let stmt = client.prepare_cached(queries::WEBHOOK_FILTERS).await?;
    let keys = |list: Option<Vec<String>>| -> Option<HashSet<Pubkey>> {
        list.map(|l| l.iter().filter_map(|k| k.parse().ok()).collect())
    };
    Ok(client
        .query(&stmt, &[&cluster])
        .await?
        .iter()
        .filter_map(|r| {
            Some(Filter {
                id: r.get("id"),
                below: r.get::<_, &str>("below_wad").parse().ok()?,
                owners: keys(r.get("owners")),
                pools: keys(r.get("pools")),
                created_tick: u64::try_from(r.get::<_, i64>("created_tick")).unwrap_or(0),
            })
        })
        .collect())
}

/// The last change whose deliveries are stored.
pub async fn cursor(pool: &Pool, cluster: &str) -> DbResult<u64> {
    let client = pool.get().await?;
    let stmt = client.prepare_cached(queries::WEBHOOK_CURSOR).await?;
    let through: i64 = client.query_one(&stmt, &[&cluster]).await?.get(0);
    Ok(u64::try_from(through).unwrap_or(0))
}

/// A delivery to store.
#[derive(Debug, Clone)]
pub struct Draft {
    pub tick: u64,
    pub delivery_id: String,
    pub webhook_id: String,
    pub change_id: String,
    pub events: serde_json::Value,
}

/// Stores the drafts of changes past the cursor and moves it to `through`;
/// the cursor as it is after.
pub async fn store(pool: &Pool, cluster: &str, drafts: &[Draft], through: u64) -> DbResult<u64> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    let held: i64 = tx
        .query_one(queries::LOCK_WEBHOOK_CURSOR, &[&cluster])
        .await?
        .get(0);
    let held = u64::try_from(held).unwrap_or(0);
    let new: Vec<&Draft> = drafts.iter().filter(|d| d.tick > held).collect();
    if !new.is_empty() {
        let ids: Vec<&str> = new.iter().map(|d| d.delivery_id.as_str()).collect();
        let webhooks: Vec<&str> = new.iter().map(|d| d.webhook_id.as_str()).collect();
        let changes: Vec<&str> = new.iter().map(|d| d.change_id.as_str()).collect();
        let events: Vec<&serde_json::Value> = new.iter().map(|d| &d.events).collect();
        let ticks: Vec<i64> = new
            .iter()
            .map(|d| i64::try_from(d.tick).unwrap_or(i64::MAX))
            .collect();
        tx.execute(
            queries::INSERT_DELIVERIES,
            &[&ids, &webhooks, &changes, &events, &ticks],
        )
        .await?;
    }
    let through = i64::try_from(through).unwrap_or(i64::MAX);
    tx.execute(queries::SET_WEBHOOK_CURSOR, &[&cluster, &through])
        .await?;
    tx.commit().await?;
    Ok(held.max(u64::try_from(through).unwrap_or(0)))
}
