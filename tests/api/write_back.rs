//! The stored health factor (decisions §5: every row of an owner carries the
//! account's value) after a move that re-scores more owners than one chunk of
//! the write-back: every row ends with the value the API serves, written in
//! several short transactions (an ingest write waits for one chunk at most,
//! not for the whole move).

use std::time::Duration;

use lendex::domain::pubkey::Pubkey;

use crate::common::*;

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

#[actix_rt::test]
async fn a_move_of_every_owner_is_stored_in_chunks_on_every_row() {
    let app = spawn_app().await;
    let db = app.db.connect().await;
    let collateral = insert_pool(&db, ORACLE_DOLLAR).await;
    let debt = insert_pool(&db, ORACLE_DOLLAR).await;
    // Each owner: 1,000 tokens deposited in one pool, 500 borrowed in the
    // other: health factor 1,000 x 0.8 / 500 = 1.6.
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
    assert_every_row_comes_to_store(&db, "1600000000000000000").await;

    // The collateral halves: every owner is under water at 0.8.
    db.execute(
        "UPDATE pools SET oracle_price = $2 WHERE pool_address = $1",
        &[&collateral, &(ORACLE_DOLLAR / 2)],
    )
    .await
    .unwrap();
    let after = "800000000000000000";
    assert_every_row_comes_to_store(&db, after).await;
    let (status, body) = app.get(&format!("/api/positions/{}", owners[7])).await;
    assert_eq!(status, 200);
    assert_eq!(body["positions"][0]["health_factor_wad"], after);
    // 2,500 owners are three chunks of at most 1,000: at least three commits.
    let (_, transactions) = stored(&db).await;
    assert!(
        transactions >= 3,
        "the move was stored in {transactions} transaction(s)"
    );
}
