//! Liquidation quotes (GET /api/liquidations), the at-risk list and the quote on
//! SSE candidates (docs/design.md §8), served by the real server from a real chain.
//! Market: USDC (6 decimals, $1) and SOL (9 decimals, $20); every pool has
//! threshold 0.8, close factor 0.5, bonus 5%, protocol fee 1%, confidence 1000.

use std::time::Duration;

use lendex::domain::wad::WAD;
use num_bigint::BigUint;
use serde_json::{Value, json};

use crate::common::*;
use crate::fixtures::feeds::read_events;
use crate::fixtures::market::{USD, market};

async fn get(m: &crate::fixtures::market::Market, path: &str) -> (u16, Value) {
    m.t.app.get(path).await
}

fn owners(list: &Value, field: &str) -> Vec<String> {
    list[field]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["owner"].as_str().unwrap().to_string())
        .collect()
}

/// floor(collateral x 0.8 x WAD / debt) with prices moved by the confidence.
fn conf_hf(usdc_deposit: u64, sol_borrow: u64) -> String {
    let wad = BigUint::from(WAD);
    // value_wad = amount x price x 10^(18 + expo - decimals)
    let collateral = BigUint::from(usdc_deposit) * BigUint::from((USD - 1000) as u64) * 10_000u32;
    let debt = BigUint::from(sol_borrow) * BigUint::from((20 * USD + 1000) as u64) * 10u32;
    (collateral * 8u32 / 10u32 * &wad / debt).to_string()
}

#[actix_rt::test]
async fn quotes_pick_the_best_pair_and_rank_by_profit() {
    let m = market(|_| {}).await;
    // a: $1000 USDC against 45 SOL ($900): HF 0.888; b: $500 against 40 SOL: HF 0.5.
    let a = m.account(1_000_000_000, 45_000_000_000).await;
    let b = m.account(500_000_000, 40_000_000_000).await;
    let healthy = m.account(1_000_000_000, 10_000_000_000).await;

    let (status, body) = get(&m, "/api/liquidations").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        owners(&body, "liquidations"),
        vec![a.clone(), b.clone()],
        "by profit"
    );
    let q = &body["liquidations"][0];
    // Repay half of 45 SOL ($450), seize $472.50 of USDC; bonus $22.50, fee 1% of it.
    assert_eq!(q["debt_pool"], m.sol.to_string());
    assert_eq!(q["collateral_pool"], m.usdc.to_string());
    assert_eq!(q["repay_amount"], "22500000000");
    assert_eq!(q["seize_amount"], "472500000");
    assert_eq!(q["repay_value_wad"], "450000000000000000000");
    assert_eq!(q["seize_value_wad"], "472500000000000000000");
    assert_eq!(q["protocol_fee_value_wad"], "225000000000000000");
    assert_eq!(q["profit_value_wad"], "22275000000000000000");
    assert_eq!(
        q["account_health_factor_wad"],
        (800 * WAD / 900).to_string()
    );
    assert_eq!(
        q["account_health_factor_conf_wad"],
        conf_hf(1_000_000_000, 45_000_000_000)
    );
    assert_eq!(
        q["oracle_stale"], true,
        "the test pools' last update is in 2023"
    );
    let positions = m.t.app.get(&format!("/api/positions/{a}")).await.1;
    let addresses: Vec<&Value> = positions["positions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["position_address"])
        .collect();
    assert!(
        addresses.contains(&&q["debt_position"]) && addresses.contains(&&q["collateral_position"])
    );
    assert_eq!(
        body["liquidations"][1]["profit_value_wad"],
        "19800000000000000000"
    );

    // Filters and limits.
    assert_eq!(
        owners(
            &get(&m, "/api/liquidations?limit=1").await.1,
            "liquidations"
        ),
        vec![a.clone()]
    );
    let rich = get(&m, "/api/liquidations?min_profit_wad=20000000000000000000")
        .await
        .1;
    assert_eq!(owners(&rich, "liquidations"), vec![a.clone()]);
    let sol = get(
        &m,
        &format!(
            "/api/liquidations?debt_pool={}&collateral_pool={}",
            m.sol, m.usdc
        ),
    )
    .await
    .1;
    assert_eq!(owners(&sol, "liquidations"), vec![a.clone(), b.clone()]);
    let none = get(&m, &format!("/api/liquidations?debt_pool={}", m.usdc))
        .await
        .1;
    assert_eq!(none, json!({ "liquidations": [] }), "nobody owes USDC");
    for bad in [
        "min_profit_wad=abc",
        "min_profit_wad=-1",
        "debt_pool=xyz",
        "collateral_pool=0OIl",
    ] {
        assert_eq!(
            get(&m, &format!("/api/liquidations?{bad}")).await,
            (400, error("invalid")),
            "{bad}"
        );
    }
    assert!(!owners(&body, "liquidations").contains(&healthy));
}

#[actix_rt::test]
async fn the_at_risk_list_watches_owners_above_one() {
    let m = market(|_| {}).await;
    let close = m.account(1_000_000_000, 38_000_000_000).await; // 800 / 760 = 1.0526
    let safer = m.account(1_000_000_000, 30_000_000_000).await; // 800 / 600 = 1.333
    let _under = m.account(1_000_000_000, 45_000_000_000).await; // 0.888: liquidatable, not "at risk"
    let _far = m.account(1_000_000_000, 10_000_000_000).await; // 4.0

    let (status, body) = get(&m, "/api/positions/at-risk").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(owners(&body, "accounts"), vec![close.clone()]);
    assert_eq!(
        body["accounts"][0]["account_health_factor_wad"],
        (800 * WAD / 760).to_string()
    );
    assert_eq!(
        body["accounts"][0]["account_health_factor_conf_wad"],
        conf_hf(1_000_000_000, 38_000_000_000)
    );
    let wider = get(&m, "/api/positions/at-risk?below=1500000000000000000")
        .await
        .1;
    assert_eq!(
        owners(&wider, "accounts"),
        vec![close.clone(), safer.clone()],
        "lowest first"
    );
    assert_eq!(
        owners(
            &get(
                &m,
                "/api/positions/at-risk?below=1500000000000000000&limit=1"
            )
            .await
            .1,
            "accounts"
        ),
        vec![close]
    );
    for bad in [
        "below=1000000000000000000",
        "below=2000000000000000001",
        "below=x",
        "below=-5",
    ] {
        assert_eq!(
            get(&m, &format!("/api/positions/at-risk?{bad}")).await,
            (400, error("invalid")),
            "{bad}"
        );
    }
    assert_eq!(
        get(&m, "/api/positions/at-risk?below=2000000000000000000")
            .await
            .0,
        200
    );
    // Health counts the band (1.0 <= hf < 2.0): `close` and `safer`.
    let health = get(&m, "/api/health").await.1;
    assert_eq!(health["checks"]["cache"]["watchedOwners"], 2);
}

#[actix_rt::test]
async fn candidates_on_the_stream_carry_their_quote() {
    let mut m = market(|_| {}).await;
    let a = m.account(1_000_000_000, 45_000_000_000).await;
    let mut res =
        m.t.app
            .http
            .get(m.t.app.url("/api/positions/unhealthy/stream"))
            .send()
            .await
            .unwrap();
    let mut buffer = String::new();
    let events = read_events(&mut res, &mut buffer, 1, Duration::from_secs(5)).await;
    assert_eq!(events[0].0, "candidate_start");
    assert_eq!(events[0].1["owner"], a);
    assert_eq!(
        events[0].1["liquidation"]["profit_value_wad"],
        "22275000000000000000"
    );

    // SOL doubles: the quote is redone on the price move (repay value doubles).
    m.set_sol_price(40 * USD).await;
    let events = read_events(&mut res, &mut buffer, 1, Duration::from_secs(5)).await;
    assert_eq!(events[0].0, "candidate_update");
    assert_eq!(events[0].1["liquidation"]["repay_amount"], "22500000000");
    assert_eq!(
        events[0].1["liquidation"]["repay_value_wad"],
        "900000000000000000000"
    );
    let (_, list) = get(&m, "/api/liquidations").await;
    assert_eq!(
        list["liquidations"][0]["repay_value_wad"],
        "900000000000000000000"
    );

    // Back to $10: healthy, the candidate stops with no quote.
    m.set_sol_price(10 * USD).await;
    let events = read_events(&mut res, &mut buffer, 1, Duration::from_secs(5)).await;
    assert_eq!(events[0].0, "candidate_stop");
    assert_eq!(events[0].1["liquidation"], Value::Null);
    assert_eq!(
        get(&m, "/api/liquidations").await.1,
        json!({ "liquidations": [] })
    );
}

/// A pool's liquidation terms and oracle time written by someone else (another
/// replica, an indexer, the operator) reach this replica's quotes: every pool
/// column the engine reads announces its change, not only prices.
#[actix_rt::test]
async fn terms_and_oracle_time_written_elsewhere_reach_the_quotes() {
    let m = market(|_| {}).await;
    let owner = m.account(500_000_000, 40_000_000_000).await; // HF 0.5
    let quote = async || {
        let (status, body) = get(&m, "/api/liquidations").await;
        assert_eq!(status, 200);
        body["liquidations"][0].clone()
    };
    let before = quote().await;
    assert_eq!(before["owner"], owner);
    // Repay $400 of SOL; seize its value plus USDC's 5% bonus: 420 USDC.
    assert_eq!(before["seize_amount"], "420000000");
    assert_eq!(
        before["oracle_stale"], true,
        "the pools' oracle time is 2023"
    );

    let db = m.t.app.db.connect().await;
    let usdc = m.usdc.to_string();
    db.execute(
        "UPDATE pools SET liquidation_bonus_wad = 100000000000000000 WHERE pool_address = $1",
        &[&usdc],
    )
    .await
    .unwrap();
    let bonus_heard = eventually(Duration::from_secs(10), async || {
        quote().await["seize_amount"] == "440000000"
    })
    .await;
    assert!(
        bonus_heard,
        "a 10% bonus seizes 440 USDC: {}",
        quote().await
    );

    db.execute(
        "UPDATE pools SET last_update_ts = extract(epoch FROM now())::bigint",
        &[],
    )
    .await
    .unwrap();
    let fresh = eventually(Duration::from_secs(10), async || {
        quote().await["oracle_stale"] == false
    })
    .await;
    assert!(fresh, "a fresh oracle time is heard: {}", quote().await);
}

/// GET /api/pools/status: every pool the engine prices, its token and oracle,
/// and the quotes' own staleness rule, which follows a new oracle time.
#[actix_rt::test]
async fn pool_status_shows_each_pools_oracle_age_by_the_quotes_rule() {
    let m = market(|_| {}).await;
    let status = async || {
        let (status, body) = get(&m, "/api/pools/status").await;
        assert_eq!(status, 200);
        body
    };
    let body = status().await;
    assert!(body["max_oracle_age_seconds"].as_i64().unwrap() > 0);
    let pools = body["pools"].as_array().unwrap();
    let mut addresses: Vec<&str> = pools
        .iter()
        .map(|p| p["pool_address"].as_str().unwrap())
        .collect();
    addresses.sort();
    let mut want = vec![m.usdc.to_string(), m.sol.to_string()];
    want.sort();
    assert_eq!(addresses, want);
    for pool in pools {
        assert_eq!(pool["oracle_stale"], true, "the pools' oracle time is 2023");
        assert!(pool["oracle_age_seconds"].as_i64().unwrap() > 86_400);
        assert!(pool["oracle_price"].is_string(), "{pool}");
    }

    let db = m.t.app.db.connect().await;
    db.execute(
        "UPDATE pools SET last_update_ts = extract(epoch FROM now())::bigint",
        &[],
    )
    .await
    .unwrap();
    let fresh =
        eventually(Duration::from_secs(10), async || {
            status().await["pools"].as_array().unwrap().iter().all(|p| {
                p["oracle_stale"] == false && p["oracle_age_seconds"].as_i64().unwrap() < 60
            })
        })
        .await;
    assert!(fresh, "a fresh oracle time is heard: {}", status().await);
}
