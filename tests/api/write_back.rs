//! The stored health factor (decisions §5: every row of an owner carries the
//! account's value) after a move that re-scores more owners than one chunk of
//! the write-back: every row ends with the value the API serves, written in
//! several short transactions (an ingest write waits for one chunk at most,
//! not for the whole move).

use std::time::Duration;

use lendex::domain::pubkey::Pubkey;

use crate::common::*;

const OWNERS: usize = 2_500;
/// $1 with the oracle's exponent -8.
const DOLLAR: i64 = 100_000_000;

/// A pool at `price` (6 decimals, liquidation threshold 0.8), written by SQL
/// as an indexer would.
async fn insert_pool(db: &tokio_postgres::Client, price: i64) -> String {
    let (pool, mint) = (
        Pubkey::new_unique().to_string(),
        Pubkey::new_unique().to_string(),
    );
    db.execute(
        "INSERT INTO pools (cluster, pool_address, token_mint, authority, vault, pool_bump, authority_bump,
            vault_bump, decimals, paused, total_deposits, total_borrows, accumulated_fees, total_deposit_shares,
            deposit_index_wad, borrow_index_wad, last_update_ts, ltv_wad, liquidation_threshold_wad,
            liquidation_bonus_wad, protocol_liq_fee_wad, reserve_factor_wad, close_factor_wad, base_rate_wad,
            optimal_util_wad, slope1_wad, slope2_wad, flash_fee_bps, created_by, init_signature, slot,
            oracle_price, oracle_expo)
         VALUES ('localnet', $1, $2, $2, $2, 255, 255, 255, 6, false, 0, 0, 0, 0, 1000000000000000000,
            1000000000000000000, 0, 0, 800000000000000000, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'test', 'test', 1,
            $3, -8)",
        &[&pool, &mint, &price],
    )
    .await
    .unwrap();
    pool
}

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

#[actix_rt::test]
async fn a_move_of_every_owner_is_stored_in_chunks_on_every_row() {
    let app = spawn_app().await;
    let db = app.db.connect().await;
    let collateral = insert_pool(&db, DOLLAR).await;
    let debt = insert_pool(&db, DOLLAR).await;
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
    let before = "1600000000000000000".to_string();
    let db_ref = &db;
    let before_ref = &before;
    assert!(
        eventually(Duration::from_secs(30), async || {
            stored(db_ref).await.0 == [before_ref.clone()]
        })
        .await,
        "every row stores 1.6 before the move: {:?}",
        stored(&db).await
    );

    // The collateral halves: every owner is under water at 0.8.
    db.execute(
        "UPDATE pools SET oracle_price = $2 WHERE pool_address = $1",
        &[&collateral, &(DOLLAR / 2)],
    )
    .await
    .unwrap();
    let after = "800000000000000000".to_string();
    let after_ref = &after;
    assert!(
        eventually(Duration::from_secs(30), async || {
            stored(db_ref).await.0 == [after_ref.clone()]
        })
        .await,
        "every row stores 0.8 after the move: {:?}",
        stored(&db).await
    );
    let (status, body) = app.get(&format!("/api/positions/{}", owners[7])).await;
    assert_eq!(status, 200);
    assert_eq!(body["positions"][0]["health_factor_wad"], after.as_str());
    // 2,500 owners are three chunks of at most 1,000: at least three commits.
    let (_, transactions) = stored(&db).await;
    assert!(
        transactions >= 3,
        "the move was stored in {transactions} transaction(s)"
    );
}
