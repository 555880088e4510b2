//! GET /api/positions/{user} serves every field as stored (docs/design.md §4.10): a
//! position read again with no change of its data still moves its
//! last_synced_at, and the rows stay sorted by it, newest first, whether the
//! read was an on-demand sync or the background reconciliation.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::chain_support::*;
use crate::common::*;

/// (position, last_synced_at) as PostgreSQL holds them, newest first.
async fn stored(db: &tokio_postgres::Client, owner: &str) -> Vec<(String, DateTime<Utc>)> {
    db.query(
        "SELECT position_address, last_synced_at FROM positions WHERE owner = $1
         ORDER BY last_synced_at DESC, position_address",
        &[&owner],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect()
}

/// (position, last_synced_at) as the API answers them, in its order.
async fn served(app: &TestApp, owner: &str) -> Vec<(String, DateTime<Utc>)> {
    let (status, body) = app.get(&format!("/api/positions/{owner}")).await;
    assert_eq!(status, 200, "{body}");
    body["positions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p: &Value| {
            let at = p["last_synced_at"].as_str().unwrap();
            (
                p["position_address"].as_str().unwrap().to_string(),
                DateTime::parse_from_rfc3339(at)
                    .unwrap()
                    .with_timezone(&Utc),
            )
        })
        .collect()
}

async fn sync(t: &ChainApp, pool: &lendex::domain::pubkey::Pubkey, owner: &str) {
    let body = json!({ "pool_address": pool.to_string(), "user": owner });
    let (status, answer) = t.app.post("/api/positions/sync", &body).await;
    assert_eq!(status, 200, "{answer}");
}

#[actix_rt::test]
async fn a_resync_with_unchanged_data_moves_the_row_to_the_top() {
    // No background reconciliation during the test: only the syncs stamp.
    let t = ChainApp::start_with(|c| c.sync.interval_seconds = 3600).await;
    let db = t.app.db.connect().await;
    let owner = Wallet::new();
    let owner_key = key(&owner.pubkey());
    let mut pools = Vec::new();
    for _ in 0..3 {
        let (pool, _) = t.create_and_register(6, Some(100_000_000), Some(-8)).await;
        let position = t.put_position(&pool, &owner_key, 1_000_000, 200_000).await;
        pools.push((pool, position.to_string()));
    }
    for (pool, _) in &pools {
        sync(&t, pool, &owner.pubkey()).await;
    }
    // The live source may re-read a position it was told of meanwhile (a
    // background write, applied a moment after its commit): the answer is
    // compared with the table once both are still.
    assert_served_as_stored(&t.app, &db, &owner.pubkey()).await;
    let first = served(&t.app, &owner.pubkey()).await;
    let newest_before = first.iter().map(|(_, at)| *at).max().unwrap();
    // The row listed last is synced again, its data unchanged: 200 means
    // committed, and the answer at once holds the new time, newer than any
    // time listed before, so on top of every row not stamped since.
    let (last, _) = first.last().unwrap().clone();
    let (pool, _) = pools
        .iter()
        .find(|(_, position)| *position == last)
        .unwrap();
    sync(&t, pool, &owner.pubkey()).await;
    let at_once = served(&t.app, &owner.pubkey()).await;
    let (place, (_, synced_at)) = at_once
        .iter()
        .enumerate()
        .find(|(_, (address, _))| *address == last)
        .unwrap();
    assert!(*synced_at > newest_before, "with its new time: {at_once:?}");
    // Only a row a background re-read stamped later still may stand above it.
    assert!(
        at_once[..place].iter().all(|(_, at)| at >= synced_at),
        "the answer moved the row to the top: {at_once:?}"
    );
    assert!(
        at_once.windows(2).all(|w| w[0].1 >= w[1].1),
        "newest first: {at_once:?}"
    );
    // The table holds that time for the row (a background re-read may have
    // stamped it later since), and the answer follows the table.
    let now = stored(&db, &owner.pubkey()).await;
    let row = now.iter().find(|(address, _)| *address == last);
    assert!(
        row.is_some_and(|(_, at)| at >= synced_at),
        "the database holds the new time: {now:?}, answered {at_once:?}"
    );
    assert_served_as_stored(&t.app, &db, &owner.pubkey()).await;
}

/// The answer equals the table, allowing a background write committed just
/// before to be applied (a touch never applied fails: it stays behind).
async fn assert_served_as_stored(app: &TestApp, db: &tokio_postgres::Client, owner: &str) {
    assert!(
        eventually(Duration::from_secs(5), async || {
            served(app, owner).await == stored(db, owner).await
        })
        .await,
        "served {:?}, stored {:?}",
        served(app, owner).await,
        stored(db, owner).await
    );
}

#[actix_rt::test]
async fn the_background_reconciliation_is_served_as_stored() {
    let t = ChainApp::start_with(|c| c.sync.interval_seconds = 1).await;
    let db = t.app.db.connect().await;
    let owner = Wallet::new();
    let owner_key = key(&owner.pubkey());
    for _ in 0..2 {
        let (pool, _) = t.create_and_register(6, Some(100_000_000), Some(-8)).await;
        t.put_position(&pool, &owner_key, 1_000_000, 200_000).await;
    }
    // The reconciliation indexes both positions, then stamps them again on
    // every round: the answer follows the stored times.
    assert!(
        eventually(Duration::from_secs(15), async || {
            stored(&db, &owner.pubkey()).await.len() == 2
        })
        .await,
        "never indexed"
    );
    let indexed = stored(&db, &owner.pubkey()).await;
    assert!(
        eventually(Duration::from_secs(15), async || {
            let now = stored(&db, &owner.pubkey()).await;
            now.iter().all(|(_, at)| *at > indexed[0].1)
                && served(&t.app, &owner.pubkey()).await == now
        })
        .await,
        "served {:?}, stored {:?}",
        served(&t.app, &owner.pubkey()).await,
        stored(&db, &owner.pubkey()).await
    );
}
