//! The stored health factor (docs/design.md §3: every row of an owner carries the
//! account's value) after a move that re-scores more owners than one chunk of
//! the write-back: every row ends with the value the API serves, written in
//! several short transactions (an ingest write waits for one chunk at most,
//! not for the whole move).

use std::time::Duration;

use lendex::domain::pubkey::Pubkey;

use crate::common::*;
use crate::process::{serve, wait_until_up};

const OWNERS: usize = 2_500;

fn unique_keys(n: usize) -> Vec<String> {
    (0..n).map(|_| Pubkey::new_unique().to_string()).collect()
}

/// The distinct stored health factors, and in how many transactions the
/// rows were last written (rows written together share their xmin).
async fn stored(db: &tokio_postgres::Client) -> (Vec<String>, i64) {
    let values = db
        .query(
            "SELECT DISTINCT health_factor_wad::text FROM positions ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let transactions = db
        .query_one("SELECT count(DISTINCT xmin::text) FROM positions", &[])
        .await
        .unwrap()
        .get(0);
    (values, transactions)
}

/// Waits until every position row stores `value` (30 s at most).
async fn assert_every_row_comes_to_store(db: &tokio_postgres::Client, value: &str) {
    let only = [value.to_string()];
    let only = &only;
    assert!(
        eventually(Duration::from_secs(30), async || stored(db).await.0
            == *only)
        .await,
        "every row stores {value}: {:?}",
        stored(db).await
    );
}

/// 2,500 owners written by SQL, each with 1,000 tokens deposited in one pool
/// and 500 borrowed from another (health factor 1,000 x 0.8 / 500 = 1.6),
/// waited for until every row stores 1.6. Returns the collateral pool and
/// the owners.
async fn seed(db: &tokio_postgres::Client) -> (String, Vec<String>) {
    let collateral = insert_pool(db, ORACLE_DOLLAR).await;
    let debt = insert_pool(db, ORACLE_DOLLAR).await;
    let owners = unique_keys(OWNERS);
    for (pool, shares, principal) in [
        (&collateral, 1_000_000_000i64, 0i64),
        (&debt, 0, 500_000_000),
    ] {
        db.execute(
            "INSERT INTO positions (cluster, position_address, pool_address, owner, deposit_shares,
                 borrow_principal, deposit_idx_snap, borrow_idx_snap)
             SELECT 'localnet', p, $1, o, $4::bigint, $5::bigint, 1000000000000000000, 1000000000000000000
             FROM unnest($2::text[], $3::text[]) AS t(p, o)",
            &[pool, &unique_keys(OWNERS), &owners, &shares, &principal],
        )
        .await
        .unwrap();
    }
    assert_every_row_comes_to_store(db, "1600000000000000000").await;
    (collateral, owners)
}

/// Halves the collateral's price: every owner sinks to 0.8.
async fn halve(db: &tokio_postgres::Client, collateral: &str) {
    db.execute(
        "UPDATE pools SET oracle_price = $2 WHERE pool_address = $1",
        &[&collateral, &(ORACLE_DOLLAR / 2)],
    )
    .await
    .unwrap();
}

const AFTER: &str = "800000000000000000";

#[actix_rt::test]
async fn a_move_of_every_owner_is_stored_in_chunks_on_every_row() {
    let app = spawn_app().await;
    let db = app.db.connect().await;
    let (collateral, owners) = seed(&db).await;

    halve(&db, &collateral).await;
    assert_every_row_comes_to_store(&db, AFTER).await;
    let (status, body) = app.get(&format!("/api/positions/{}", owners[7])).await;
    assert_eq!(status, 200);
    assert_eq!(body["positions"][0]["health_factor_wad"], AFTER);
    // 2,500 owners are three chunks of at most 1,000: at least three commits.
    let (_, transactions) = stored(&db).await;
    assert!(
        transactions >= 3,
        "the move was stored in {transactions} transaction(s)"
    );
}

/// Chunks that fail (the table locked past the writer's lock timeout) are
/// given back and written by a later write-back: none is lost.
#[actix_rt::test]
async fn chunks_that_fail_are_written_later() {
    // A bound short enough to fail within the wait below while the table is
    // locked (its lock share: 800 ms), long enough for a chunk to commit on
    // a loaded machine once it is not (its run share: 1 s).
    let app = spawn_app_with(|c| c.database.write_timeout_ms = 2_000).await;
    let db = app.db.connect().await;
    let (collateral, _) = seed(&db).await;
    // Reads go on; every UPDATE of positions waits, then fails.
    let mut locker = app.db.connect().await;
    let lock = locker.transaction().await.unwrap();
    lock.batch_execute("LOCK TABLE positions IN EXCLUSIVE MODE")
        .await
        .unwrap();
    halve(&db, &collateral).await;
    let (status, body) = app.get("/api/health").await;
    assert_eq!(status, 200, "{body}");
    // Past the first write-back (1 s head start) and its failure.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(
        stored(&db).await.0,
        ["1600000000000000000"],
        "nothing written while locked"
    );
    lock.rollback().await.unwrap();
    assert_every_row_comes_to_store(&db, AFTER).await;
}

/// Two replicas on one database: the holder of the lease alone writes the
/// health factors back; the other serves the same values and writes none
/// (several writers raced for the same rows, deadlocking each other).
#[actix_rt::test]
async fn on_a_cluster_the_lease_holder_alone_writes_health_factors() {
    let test_db = TestDb::create().await;
    let http = reqwest::Client::new();
    let ports: [u16; 2] = free_ports();
    let mut replicas = Vec::new();
    for port in ports {
        replicas.push(serve(&test_db, port, &[]));
        wait_until_up(&http, &format!("http://127.0.0.1:{port}")).await;
    }
    let db = test_db.connect().await;
    let (collateral, owners) = seed(&db).await;
    halve(&db, &collateral).await;
    assert_every_row_comes_to_store(&db, AFTER).await;

    let mut leaders = Vec::new();
    for port in ports {
        let base = format!("http://127.0.0.1:{port}");
        assert!(
            eventually(Duration::from_secs(10), async || {
                let body = get_json(&http, &format!("{base}/api/positions/{}", owners[7])).await;
                body["positions"][0]["health_factor_wad"] == AFTER
            })
            .await,
            "{base} serves the moved value"
        );
        let health = get_json(&http, &format!("{base}/api/health")).await;
        let metrics = get_text(&http, &format!("{base}/metrics")).await;
        let written: f64 = metrics
            .lines()
            .find_map(|l| l.strip_prefix("lendex_engine_health_factors_written_total "))
            .map_or(0.0, |v| v.parse().unwrap());
        leaders.push((health["checks"]["sync"]["role"] == "leader", written));
    }
    let (leader, follower): (Vec<&(bool, f64)>, Vec<_>) =
        leaders.iter().partition(|(lead, _)| *lead);
    assert_eq!((leader.len(), follower.len()), (1, 1), "{leaders:?}");
    // The seed and the move: every owner written twice, by the leader.
    assert!(leader[0].1 >= (2 * OWNERS) as f64, "{leaders:?}");
    assert_eq!(follower[0].1, 0.0, "the follower wrote: {leaders:?}");
    drop(replicas);
}
