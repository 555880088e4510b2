//! History end to end (docs/design.md §12): what the leader records as the index
//! changes, stored and served back with the values the API served at the time.

use std::time::Duration;

use lendex::domain::pubkey::Pubkey;
use lendex::domain::wad::WAD;
use serde_json::Value;

use crate::common::*;
use crate::fixtures::history::*;

async fn wait_served(app: &TestApp, owner: &str, hf: u128) {
    let want = hf.to_string();
    assert!(
        eventually(Duration::from_secs(10), async || served(app, owner)
            .await
            .as_deref()
            == Some(want.as_str()))
        .await,
        "the API serves {want} for {owner}: {:?}",
        served(app, owner).await
    );
}

/// Waits until the owner's last stored point is `hf`; returns every point.
async fn wait_point(app: &TestApp, owner: &str, hf: u128) -> Vec<Value> {
    let want = hf.to_string();
    let mut last = Vec::new();
    let found = eventually(Duration::from_secs(10), async || {
        last = points(app, owner).await;
        last.last()
            .is_some_and(|p| p["health_factor_wad"] == want.as_str())
    })
    .await;
    assert!(found, "a point of {want}: {last:?}");
    last
}

const START: u128 = 16 * WAD / 10;
const UNDER: u128 = 96 * WAD / 100;

#[actix_rt::test]
async fn crossings_and_liquidations_are_recorded_with_the_served_values() {
    let app = history_app().await;
    let db = app.db.connect().await;
    let b = book(&app, &db).await;
    wait_served(&app, &b.owner, START).await;
    let first = wait_point(&app, &b.owner, START).await;
    assert_eq!(first.last().unwrap()["cause"], "position");
    assert_eq!(
        first.last().unwrap()["collateral_value_wad"],
        (200 * WAD).to_string()
    );
    assert_eq!(
        first.last().unwrap()["debt_value_wad"],
        (100 * WAD).to_string()
    );

    // $20 -> $12: 120 x 0.8 / 100 = 0.96, under water.
    set_price(&db, &b.sol, 12 * ORACLE_DOLLAR).await;
    wait_served(&app, &b.owner, UNDER).await;
    let after = wait_point(&app, &b.owner, UNDER).await;
    assert_eq!(
        after.len(),
        first.len() + 1,
        "one point for the move: {after:?}"
    );
    assert_eq!(after.last().unwrap()["cause"], "price");
    let under = events(&app, &format!("owner={}&kind=under", b.owner)).await;
    assert_eq!(under.len(), 1, "{under:?}");
    assert_eq!(under[0]["health_factor_before_wad"], START.to_string());
    assert_eq!(under[0]["health_factor_after_wad"], UNDER.to_string());
    assert_eq!(under[0]["debt_pool"], Value::Null);

    // A move of 0.5% in the same band is not recorded.
    set_price(&db, &b.sol, 1206 * ORACLE_DOLLAR / 100).await;
    wait_served(&app, &b.owner, 9648 * WAD / 10_000).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(points(&app, &b.owner).await.len(), after.len(), "below 1%");

    // A liquidation: the debt falls by 50 USDC and 3 SOL are seized, both at
    // slot 100, in one statement (as an indexer would write it).
    db.execute(
        "UPDATE positions SET
             borrow_principal = CASE WHEN position_address = $1 THEN 50000000 ELSE borrow_principal END,
             deposit_shares = CASE WHEN position_address = $2 THEN 7000000 ELSE deposit_shares END,
             slot = 100
         WHERE position_address IN ($1, $2)",
        &[&b.usdc_position, &b.sol_position],
    )
    .await
    .unwrap();
    // 7 x 12.06 x 0.8 / 50 = 1.35072: back above water.
    let recovered_hf = 135_072 * WAD / 100_000;
    wait_served(&app, &b.owner, recovered_hf).await;
    wait_point(&app, &b.owner, recovered_hf).await;
    let all = events(&app, &format!("owner={}", b.owner)).await;
    let kinds: Vec<&str> = all.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        vec!["liquidated", "recovered", "under"],
        "newest first: {all:?}"
    );
    let liquidated = &all[0];
    assert_eq!(liquidated["debt_pool"], b.usdc.as_str());
    assert_eq!(liquidated["repaid"], "50000000");
    assert_eq!(liquidated["collateral_pool"], b.sol.as_str());
    assert_eq!(liquidated["seized"], "3000000");
    assert_eq!(liquidated["slot"], 100);
    assert_eq!(
        liquidated["health_factor_before_wad"],
        (9648 * WAD / 10_000).to_string()
    );
    // Ids increase; the pool filter finds the liquidation by either pool.
    assert!(all[0]["id"].as_i64() > all[1]["id"].as_i64());
    for pool in [&b.sol, &b.usdc] {
        let by_pool = events(&app, &format!("pool={pool}&kind=liquidated")).await;
        assert_eq!(by_pool.len(), 1);
    }
    // Every pool's price changes, its registration first.
    let (status, prices) = app.get(&format!("/api/pools/{}/prices", b.sol)).await;
    assert_eq!(status, 200);
    let prices: Vec<&str> = prices["prices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["price"].as_str().unwrap())
        .collect();
    assert_eq!(prices, vec!["2000000000", "1200000000", "1206000000"]);
}

#[actix_rt::test]
async fn the_market_is_sampled_and_bucketed() {
    let app = history_app().await;
    let db = app.db.connect().await;
    let b = book(&app, &db).await;
    // The pools' totals, which the market also records.
    db.execute(
        "UPDATE pools SET total_deposits = 70000000, total_borrows = 30000000, slot = slot + 1",
        &[],
    )
    .await
    .unwrap();
    wait_served(&app, &b.owner, START).await;
    set_price(&db, &b.sol, 12 * ORACLE_DOLLAR).await;
    wait_served(&app, &b.owner, UNDER).await;
    let mut samples = Vec::new();
    assert!(
        eventually(Duration::from_secs(10), async || {
            let (_, body) = app.get("/api/history/market").await;
            samples = body["points"].as_array().unwrap().clone();
            samples.iter().any(|s| s["owners_under_water"] == 1)
        })
        .await,
        "a sample with the owner under water: {samples:?}"
    );
    let under = samples
        .iter()
        .find(|s| s["owners_under_water"] == 1)
        .unwrap();
    assert_eq!(under["owners"], 1);
    assert_eq!(under["debt_value_wad_under_water"], (100 * WAD).to_string());
    assert_eq!(under["bad_debt_value_wad"], "0");
    // Deposits and borrows are the pools' status totals at the sample's prices
    // (none moved since it).
    let (_, status) = app.get("/api/pools/status").await;
    let sum = |field: &str| {
        let pools = status["pools"].as_array().unwrap();
        pools
            .iter()
            .map(|p| p[field].as_str().unwrap().parse::<u128>().unwrap())
            .sum::<u128>()
            .to_string()
    };
    // 70 SOL at $12 and 70 USDC; 30 of each borrowed.
    assert_eq!(sum("deposits_value_wad"), (910 * WAD).to_string());
    assert_eq!(sum("borrows_value_wad"), (390 * WAD).to_string());
    assert_eq!(under["deposits_value_wad"], sum("deposits_value_wad"));
    assert_eq!(under["borrows_value_wad"], sum("borrows_value_wad"));
    let (status, buckets) = app.get("/api/history/market?resolution=1h").await;
    assert_eq!(status, 200);
    let buckets = buckets["points"].as_array().unwrap();
    assert!(!buckets.is_empty());
    let total: u64 = buckets.iter().map(|b| b["count"].as_u64().unwrap()).sum();
    assert!(total >= samples.len() as u64, "{buckets:?}");
    assert_eq!(buckets.last().unwrap()["owners_under_water_max"], 1);
    assert_eq!(
        buckets.last().unwrap()["deposits_value_wad"],
        samples.last().unwrap()["deposits_value_wad"]
    );
}

#[actix_rt::test]
async fn bad_parameters_are_invalid_and_empty_history_is_empty() {
    let app = history_app().await;
    let db = app.db.connect().await;
    let pool = insert_pool(&db, ORACLE_DOLLAR).await;
    let owner = Pubkey::new_unique().to_string();
    let invalid = error("invalid");
    for path in [
        "/api/positions/not-a-key/history".to_string(),
        format!("/api/positions/{owner}/history?from=yesterday"),
        format!("/api/positions/{owner}/history?from=2000&to=1000"),
        format!("/api/positions/{owner}/history?from=0&to=2678400001"),
        format!("/api/positions/{owner}/history?resolution=2h"),
        format!("/api/positions/{owner}/history?limit=0"),
        format!("/api/positions/{owner}/history?limit=x"),
        format!("/api/positions/{owner}/history?cursor=abc"),
        "/api/history/events?kind=exploded".to_string(),
        "/api/history/events?owner=xyz".to_string(),
        "/api/history/events?pool=xyz".to_string(),
        "/api/history/events?from=0&to=2678400001".to_string(),
        format!("/api/pools/{pool}/prices?to=-1"),
        "/api/pools/xyz/prices".to_string(),
        "/api/history/market?resolution=1w".to_string(),
        "/api/history/market?from=0&to=2678400001".to_string(),
    ] {
        assert_eq!(app.get(&path).await, (400, invalid.clone()), "{path}");
    }
    let unknown = Pubkey::new_unique();
    assert_eq!(
        app.get(&format!("/api/pools/{unknown}/prices")).await,
        (404, error("not found"))
    );
    // Buckets may span more than 31 days.
    let (status, body) = app
        .get(&format!(
            "/api/positions/{owner}/history?from=0&resolution=1d"
        ))
        .await;
    assert_eq!((status, &body["points"]), (200, &serde_json::json!([])));
    assert_eq!(body["initial"], Value::Null);
    assert_eq!(body["next_cursor"], Value::Null);
    assert!(
        body["retention_start"]
            .as_str()
            .unwrap()
            .ends_with("T00:00:00.000Z")
    );
    assert_eq!(
        events(&app, &format!("owner={owner}")).await,
        Vec::<Value>::new()
    );
}
