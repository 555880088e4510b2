//! The risk lens over HTTP (docs/design.md §10): a price shock, a liquidation curve,
//! liquidation prices on detail and at-risk rows, and every malformed request
//! answered 400 `invalid` (or 404 `not found` for a pool not in the index).

use lendex::domain::pubkey::Pubkey;
use lendex::domain::wad::WAD;
use serde_json::{Value, json};

use crate::common::*;
use crate::fixtures::market::market;

fn wad(units: u128) -> String {
    (units * WAD).to_string()
}

/// USDC at $1 and SOL at $20 (threshold 0.8 both); a borrows 45 SOL against
/// 1,000 USDC (under water), c 10 SOL (healthy), e 38 SOL (at 1.05).
#[actix_rt::test]
async fn shocks_curves_and_liquidation_prices() {
    let m = market(|_| {}).await;
    let a = m.account(1_000_000_000, 45_000_000_000).await;
    let _c = m.account(1_000_000_000, 10_000_000_000).await;
    let e = m.account(1_000_000_000, 38_000_000_000).await;
    let app = &m.t.app;
    let (sol, usdc) = (m.sol.to_string(), m.usdc.to_string());

    // SOL +10%: e goes under ($836 of debt against $800 weighted).
    let (status, shock) = app.get(&format!("/api/risk/shock?shock={sol}:1000")).await;
    assert_eq!(status, 200, "{shock}");
    assert_eq!(
        shock["shock"],
        json!([{ "pool": sol, "change_bps": 1000, "price": "2200000000", "expo": -8 }])
    );
    assert_eq!(shock["owners"], 3);
    assert_eq!(shock["liquidatable_before"], 1);
    assert_eq!(shock["liquidatable_after"], 2);
    assert_eq!(shock["newly_liquidatable"], 1);
    assert_eq!(shock["debt_value_wad_liquidatable_after"], wad(990 + 836));
    assert_eq!(shock["bad_debt_value_wad_after"], "0");
    // Profits at $22: e repays 19 SOL ($418, bonus 5%, fee 1% of it),
    // a 22.5 SOL ($495).
    assert_eq!(shock["profit_value_wad_after"], "45193500000000000000");
    let accounts = shock["accounts"].as_array().unwrap();
    assert_eq!(accounts.len(), 1);
    assert_eq!(accounts[0]["owner"], e);
    assert_eq!(
        accounts[0]["account_health_factor_wad"],
        (800 * WAD / 760).to_string()
    );
    assert_eq!(
        accounts[0]["shocked_health_factor_wad"],
        (800 * WAD / 836).to_string()
    );
    let quote = &accounts[0]["liquidation"];
    assert_eq!(quote["debt_pool"], sol);
    assert_eq!(quote["collateral_pool"], usdc);
    assert_eq!(quote["repay_amount"], "19000000000");
    assert_eq!(quote["profit_value_wad"], "20691000000000000000");

    // SOL +50%: debt no collateral covers, a $350 and e $140.
    let (_, shock) = app
        .get(&format!("/api/risk/shock?shock={sol}:5000&limit=1"))
        .await;
    assert_eq!(shock["bad_debt_value_wad_after"], wad(350 + 140));
    // Down to zero: SOL unpriced, its debt left out; nobody is under water.
    let (_, shock) = app
        .get(&format!("/api/risk/shock?shock={sol}:-10000"))
        .await;
    assert_eq!(shock["shock"][0]["price"], "0");
    assert_eq!(shock["liquidatable_after"], 0);
    assert!(shock["accounts"].as_array().unwrap().is_empty());

    // The SOL curve from $20 to $40 in four steps.
    let (status, curve) = app
        .get(&format!(
            "/api/risk/curve?pool={sol}&from_bps=0&to_bps=10000&steps=4"
        ))
        .await;
    assert_eq!(status, 200, "{curve}");
    assert_eq!(
        (
            curve["price"].clone(),
            curve["expo"].clone(),
            curve["owners"].clone()
        ),
        (json!("2000000000"), json!(-8), json!(3))
    );
    let points: Vec<(i64, u64, String, String)> = curve["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["change_bps"].as_i64().unwrap(),
                p["liquidatable"].as_u64().unwrap(),
                p["debt_value_wad_liquidatable"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                p["bad_debt_value_wad"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        points,
        [
            (0, 1, wad(900), "0".into()),
            (2_500, 2, wad(1_125 + 950), wad(125)),
            (5_000, 2, wad(1_350 + 1_140), wad(350 + 140)),
            (7_500, 2, wad(1_575 + 1_330), wad(575 + 330)),
            (10_000, 2, wad(1_800 + 1_520), wad(800 + 520)),
        ]
    );

    // e's liquidation prices: SOL above $21.05263157 (+526 bps), USDC below
    // $0.95 (-500 bps); the nearest is USDC's.
    let (_, detail) = app.get(&format!("/api/positions/{e}/detail")).await;
    let by_pool = |pool: &str| -> Value {
        detail["positions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["pool_address"] == pool)
            .unwrap()["liquidation_price"]
            .clone()
    };
    assert_eq!(
        by_pool(&sol),
        json!({ "price": "2105263157", "expo": -8, "direction": "above", "distance_bps": 526 })
    );
    assert_eq!(
        by_pool(&usdc),
        json!({ "price": "95000000", "expo": -8, "direction": "below", "distance_bps": -500 })
    );
    let (_, at_risk) = app.get("/api/positions/at-risk").await;
    let row = &at_risk["accounts"][0];
    assert_eq!(row["owner"], e);
    assert_eq!(
        row["nearest_liquidation"],
        json!({ "pool": usdc, "price": "95000000", "expo": -8, "direction": "below", "distance_bps": -500 })
    );
    // a is under water already: its SOL price is behind it.
    let (_, detail) = app.get(&format!("/api/positions/{a}/detail")).await;
    let sol_row = detail["positions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pool_address"] == sol)
        .unwrap()
        .clone();
    assert_eq!(sol_row["liquidation_price"]["direction"], "above");
    assert!(
        sol_row["liquidation_price"]["distance_bps"]
            .as_i64()
            .unwrap()
            < 0
    );
}

#[actix_rt::test]
async fn malformed_risk_requests_are_invalid_and_unknown_pools_not_found() {
    let m = market(|_| {}).await;
    let app = &m.t.app;
    let sol = m.sol.to_string();
    let stranger = Pubkey::new_unique().to_string();
    for path in [
        "/api/risk/shock".to_string(),
        "/api/risk/shock?shock=".into(),
        format!("/api/risk/shock?shock={sol}"),
        format!("/api/risk/shock?shock={sol}:x"),
        format!("/api/risk/shock?shock={sol}:-10001"),
        format!("/api/risk/shock?shock={sol}:100001"),
        format!("/api/risk/shock?shock={sol}:1,{sol}:2"),
        "/api/risk/shock?shock=bad:1".into(),
        "/api/risk/curve".into(),
        format!("/api/risk/curve?pool={sol}&from_bps=0&to_bps=0"),
        format!("/api/risk/curve?pool={sol}&steps=201"),
        format!("/api/risk/curve?pool={sol}&steps=0"),
        format!("/api/risk/curve?pool={sol}&from_bps=-20000"),
    ] {
        assert_eq!(app.get(&path).await, (400, error("invalid")), "{path}");
    }
    for path in [
        format!("/api/risk/shock?shock={stranger}:100"),
        format!("/api/risk/curve?pool={stranger}"),
    ] {
        assert_eq!(app.get(&path).await, (404, error("not found")), "{path}");
    }
    // A pool with no oracle price cannot be shocked.
    let (unpriced, _) = m.t.create_and_register(6, None, None).await;
    assert_eq!(
        app.get(&format!("/api/risk/shock?shock={unpriced}:100"))
            .await,
        (400, error("invalid"))
    );
}
