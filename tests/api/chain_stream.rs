//! The live chain (issue 8): with the poll at 60 s, changes made on the chain
//! reach the index through the RPC websocket alone.

use std::time::{Duration, Instant};

use lendex::domain::accounts::*;
use lendex::domain::pubkey::Pubkey;
use serde_json::Value;

use crate::common::*;
use crate::health_feed::{USD, market};

async fn stream_check(app: &TestApp) -> Value {
    app.get("/api/health").await.1["checks"]["sync"].clone()
}

#[actix_rt::test]
async fn chain_changes_arrive_by_websocket_with_no_api_call() {
    let mut m = market(|c| c.sync.interval_seconds = 60).await;
    let app = &m.t.app;
    assert!(
        eventually(Duration::from_secs(15), async || {
            let sync = stream_check(app).await;
            sync["role"] == "leader" && sync["stream"]["connected"] == true
        })
        .await,
        "{}",
        stream_check(app).await
    );

    // A new position, written on chain only: 500 USDC against 40 SOL at $20.
    let owner = Pubkey::new_unique();
    m.t.put_position(&m.usdc, &owner, 500_000_000, 0).await;
    m.t.put_position(&m.sol, &owner, 0, 40_000_000_000).await;
    let started = Instant::now();
    let path = format!("/api/positions/{owner}");
    assert!(
        eventually(Duration::from_secs(10), async || {
            app.get(&path).await.1["positions"]
                .as_array()
                .is_some_and(|p| p.len() == 2)
        })
        .await,
        "the positions never arrived: {}",
        app.get(&path).await.1
    );
    let took = started.elapsed();
    let unhealthy = app.get("/api/positions/unhealthy").await.1;
    assert!(
        unhealthy.to_string().contains(&owner.to_string()),
        "{unhealthy}"
    );

    // A price move on chain only: the owner's health factor follows.
    let before = app.get(&path).await.1["positions"][0]["health_factor_wad"].clone();
    m.sol_data.oracle_price = Some(10 * USD);
    m.t.chain
        .set(&m.sol, &m.t.program, &encode_pool(&m.sol_data))
        .await;
    let app = &m.t.app;
    assert!(
        eventually(Duration::from_secs(10), async || {
            app.get(&path).await.1["positions"][0]["health_factor_wad"] != before
        })
        .await,
        "the price move never arrived"
    );
    let sync = stream_check(app).await;
    assert!(sync["stream"]["lastNotificationAt"].is_string(), "{sync}");
    println!("position by websocket after {took:?}");
}
