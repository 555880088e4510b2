//! The health-factor engine end to end: the unhealthy feed and position detail
//! served from the cache, coherence with writes made outside this process, the
//! SSE liquidation feed, and the eviction fallback (docs/design.md §4.11, 4.13).

use std::time::Duration;

use lendex::domain::accounts::*;
use lendex::domain::pubkey::Pubkey;
use lendex::domain::rates::{RateModel, pool_apys};
use lendex::domain::wad::WAD;
use serde_json::{Value, json};

use crate::chain_support::*;
use crate::common::*;
use crate::fixtures::feeds::read_events;
use crate::fixtures::market::*;

fn owners(rows: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in rows {
        let o = r["owner"].as_str().unwrap().to_string();
        if out.last() != Some(&o) {
            out.push(o);
        }
    }
    out
}

#[actix_rt::test]
async fn unhealthy_lists_underwater_accounts_most_underwater_first() {
    let m = market(|_| {}).await;
    // HF: a = 1000*0.8/900 = 0.888.., b = 500*0.8/800 = 0.5, c = 4.0, d has no debt.
    let a = m.account(1_000_000_000, 45_000_000_000).await;
    let b = m.account(500_000_000, 40_000_000_000).await;
    let _c = m.account(1_000_000_000, 10_000_000_000).await;
    let _d = m.account(1_000_000_000, 0).await;

    let rows = m.unhealthy("").await;
    assert_eq!(owners(&rows), vec![b.clone(), a.clone()]);
    assert_eq!(
        rows.len(),
        4,
        "both deposit and borrow rows of each unhealthy owner"
    );
    let b_hf = (400 * WAD / 800).to_string();
    let a_hf = (800 * WAD / 900).to_string();
    assert_eq!(rows[0]["account_health_factor_wad"], b_hf);
    assert_eq!(rows[0]["health_factor_wad"], b_hf);
    assert_eq!(rows[0]["pool_address"], m.sol.to_string(), "debt row first");
    assert_eq!(rows[0]["borrow_principal"], "40000000000");
    assert_eq!(rows[1]["pool_address"], m.usdc.to_string());
    assert_eq!(rows[1]["deposit_shares"], "500000000");
    assert_eq!(rows[2]["account_health_factor_wad"], a_hf);
    for row in &rows {
        for field in [
            "position_address",
            "pool_address",
            "owner",
            "deposit_shares",
            "borrow_principal",
            "health_factor_wad",
            "account_health_factor_wad",
        ] {
            assert!(row[field].is_string(), "{field}");
        }
    }
    // pool= keeps only debt rows in that pool.
    let sol_rows = m.unhealthy(&format!("?pool={}", m.sol)).await;
    assert_eq!(sol_rows.len(), 2);
    assert!(
        sol_rows
            .iter()
            .all(|r| r["pool_address"] == m.sol.to_string() && r["borrow_principal"] != "0")
    );
    assert!(m.unhealthy(&format!("?pool={}", m.usdc)).await.is_empty());
    assert!(
        m.unhealthy(&format!("?pool={}", Pubkey::new_unique()))
            .await
            .is_empty()
    );
    // limit counts rows.
    assert_eq!(m.unhealthy("?limit=1").await.len(), 1);
    assert_eq!(m.unhealthy("?limit=3").await.len(), 3);
    assert_eq!(m.unhealthy("?limit=0").await.len(), 4);
    assert_eq!(
        m.t.app.get("/api/positions/unhealthy?pool=bad").await,
        (400, error("invalid"))
    );

    // The stored rows carry the same account health factor (written by the cache).
    let db = m.t.app.db.connect().await;
    let stored = async || -> Vec<(String, String)> {
        pairs(
            &db,
            "SELECT owner, health_factor_wad::text FROM positions ORDER BY owner",
        )
        .await
    };
    let rows = stored().await;
    assert!(
        rows.iter()
            .filter(|(o, _)| *o == a)
            .all(|(_, hf)| *hf == a_hf)
    );
    assert!(
        rows.iter()
            .filter(|(o, _)| *o == b)
            .all(|(_, hf)| *hf == b_hf)
    );
}

#[actix_rt::test]
async fn a_price_change_rescores_the_pools_owners() {
    let mut m = market(|_| {}).await;
    let a = m.account(1_000_000_000, 45_000_000_000).await; // 0.888
    let b = m.account(500_000_000, 40_000_000_000).await; // 0.5
    assert_eq!(owners(&m.unhealthy("").await), vec![b.clone(), a.clone()]);

    // SOL halves: a = 800/450 = 1.77, b = 400/400 = exactly 1.0 WAD, which is not below 1.
    m.set_sol_price(10 * USD).await;
    let m_ref = &m;
    assert!(
        eventually(Duration::from_secs(10), async || m_ref
            .unhealthy("")
            .await
            .is_empty())
        .await
    );
    let (_, detail) = m.t.app.get(&format!("/api/positions/{b}/detail")).await;
    assert_eq!(detail["positions"][0]["health_factor_wad"], WAD.to_string());

    // SOL doubles: both under water again, and the stored column follows.
    m.set_sol_price(40 * USD).await;
    let m_ref = &m;
    assert!(
        eventually(Duration::from_secs(10), async || m_ref
            .unhealthy("")
            .await
            .len()
            == 4)
        .await
    );
    let db = m.t.app.db.connect().await;
    let expected = (400 * WAD / 1600).to_string();
    let db_ref = &db;
    let b_ref = &b;
    let expected_ref = &expected;
    assert!(
        eventually(Duration::from_secs(10), async || {
            db_ref
                .query(
                    "SELECT health_factor_wad::text FROM positions WHERE owner = $1",
                    &[b_ref],
                )
                .await
                .unwrap()
                .iter()
                .all(|r| r.get::<_, String>(0) == *expected_ref)
        })
        .await,
        "positions.health_factor_wad follows the cache"
    );
}

#[actix_rt::test]
async fn detail_computes_tokens_debt_interest_apys_and_borrows() {
    let m = market(|_| {}).await;
    let owner = m.account(1_000_000_000, 0).await;
    // Interest has accrued on SOL: pool borrow index 1.1, position snapshot 1.0;
    // deposits have grown: USDC deposit index 1.05.
    let mut sol = m.sol_data.clone();
    sol.borrow_index_wad = 11 * WAD / 10;
    m.t.chain
        .set(&m.sol, &m.t.program, &encode_pool(&sol))
        .await;
    let mut usdc = m.usdc_data.clone();
    usdc.deposit_index_wad = 105 * WAD / 100;
    m.t.chain
        .set(&m.usdc, &m.t.program, &encode_pool(&usdc))
        .await;
    let owner_key = key(&owner);
    let (pos, _) = position_account(&m.t.program, &m.sol, &owner_key, 0, 0);
    let borrowed = UserPosition {
        owner: owner_key,
        pool: m.sol,
        deposit_shares: 0,
        borrow_principal: 3_000_000_007,
        deposit_idx_snap: WAD,
        borrow_idx_snap: WAD,
        original_deposit: 0,
        bump: 1,
    };
    m.t.chain
        .set(&pos, &m.t.program, &encode_position(&borrowed))
        .await;
    for pool in [m.usdc, m.sol] {
        assert_eq!(m.t.sync_pool(&pool).await.0, 200);
        let body = json!({ "pool_address": pool.to_string(), "user": owner });
        assert_eq!(m.t.app.post("/api/positions/sync", &body).await.0, 200);
    }
    // Borrow transactions: 12 in SOL (10 newest kept), a failed one, and one in USDC.
    for i in 0..12 {
        let tx = json!({ "signature": format!("b{i}"), "wallet": owner, "action": "borrow", "pool_address": m.sol.to_string(), "amount": format!("{i}") });
        assert_eq!(m.t.app.post("/api/transactions", &tx).await.0, 200);
    }
    let failed = json!({ "signature": "bad", "wallet": owner, "action": "borrow", "pool_address": m.sol.to_string(), "status": "failed" });
    m.t.app.post("/api/transactions", &failed).await;
    let repay = json!({ "signature": "r", "wallet": owner, "action": "repay", "pool_address": m.sol.to_string() });
    m.t.app.post("/api/transactions", &repay).await;

    let (status, body) = m.t.app.get(&format!("/api/positions/{owner}/detail")).await;
    assert_eq!(status, 200, "{body}");
    let rows = body["positions"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let sol_row = rows
        .iter()
        .find(|r| r["pool_address"] == m.sol.to_string())
        .unwrap();
    let usdc_row = rows
        .iter()
        .find(|r| r["pool_address"] == m.usdc.to_string())
        .unwrap();
    // ceil(3_000_000_007 x 1.1) = 3_300_000_007.7 -> 3_300_000_008
    assert_eq!(sol_row["borrow_debt"], "3300000008");
    assert_eq!(sol_row["principal"], "3000000007");
    assert_eq!(sol_row["interest"], "300000001");
    assert_eq!(sol_row["borrow_principal"], "3000000007");
    assert_eq!(usdc_row["deposit_tokens"], "1050000000");
    assert_eq!(usdc_row["original_deposit"], "1000000000");
    assert_eq!(usdc_row["symbol"], "TKN");
    // HF: 1050 x 0.8 / (3.300000008 x $20) = 840 / 66.00000016
    let expected_hf = {
        use num_bigint::BigUint;
        let wad = BigUint::from(WAD);
        let collateral = BigUint::from(840u32) * &wad;
        let debt = BigUint::from(3_300_000_008u64) * 20u32 * 1_000_000_000u64; // 9 dp tokens x $20, in WAD
        collateral * wad / debt
    };
    assert_eq!(sol_row["health_factor_wad"], expected_hf.to_string());
    assert_eq!(
        usdc_row["health_factor_wad"],
        expected_hf.to_string(),
        "same account value on every row"
    );
    // APYs from the pool's totals and rate model.
    let model = RateModel {
        base_rate_wad: sol.base_rate_wad,
        optimal_util_wad: sol.optimal_util_wad,
        slope1_wad: sol.slope1_wad,
        slope2_wad: sol.slope2_wad,
        reserve_factor_wad: sol.reserve_factor_wad,
    };
    let (supply, borrow) = pool_apys(&model, sol.total_borrows, sol.total_deposits);
    assert_eq!(sol_row["supply_apy"].as_f64().unwrap(), supply);
    assert_eq!(sol_row["borrow_apy"].as_f64().unwrap(), borrow);
    assert!(borrow > supply && supply > 0.0);
    // borrow_txs: SOL borrows only, not failed, newest first, at most 10.
    let txs = sol_row["borrow_txs"].as_array().unwrap();
    assert_eq!(txs.len(), 10);
    assert_eq!(txs[0]["signature"], "b11");
    assert_eq!(txs[9]["signature"], "b2");
    assert_eq!(txs[0]["amount"], "11");
    assert!(txs[0]["created_at"].is_string());
    assert_eq!(usdc_row["borrow_txs"], json!([]));

    assert_eq!(
        m.t.app
            .get(&format!("/api/positions/{}/detail", Pubkey::new_unique()))
            .await,
        (200, json!({ "positions": [] }))
    );
    assert_eq!(
        m.t.app.get("/api/positions/xyz/detail").await,
        (400, error("invalid"))
    );
}

/// Detail's borrows are served from memory after the first read, yet a borrow
/// written through the API shows on the very next read, one written by SQL
/// (another replica, an indexer) within moments, and a status moved to failed
/// takes it away.
#[actix_rt::test]
async fn detail_borrows_follow_every_write() {
    let m = market(|_| {}).await;
    let owner = m.account(1_000_000_000, 1_000_000_000).await;
    let borrows = async || -> Vec<String> {
        let (_, body) = m.t.app.get(&format!("/api/positions/{owner}/detail")).await;
        body["positions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["pool_address"] == m.sol.to_string())
            .unwrap()["borrow_txs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["signature"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(borrows().await.is_empty());
    let tx = |sig: &str, status: &str| json!({ "signature": sig, "wallet": owner, "action": "borrow", "pool_address": m.sol.to_string(), "amount": "5", "status": status });
    assert_eq!(
        m.t.app
            .post("/api/transactions", &tx("api-1", "confirmed"))
            .await
            .0,
        200
    );
    assert_eq!(
        borrows().await,
        vec!["api-1"],
        "read-your-writes on this replica"
    );

    let db = m.t.app.db.connect().await;
    db.execute(
        "INSERT INTO tx_log (cluster, signature, pool_address, wallet, action, amount, status)
         VALUES ('localnet', 'sql-1', $1, $2, 'borrow', 7, 'confirmed')",
        &[&m.sol.to_string(), &owner],
    )
    .await
    .unwrap();
    let b = &borrows;
    assert!(
        eventually(Duration::from_secs(5), async || b().await
            == vec!["sql-1", "api-1"])
        .await,
        "an external write reaches the cached list: {:?}",
        borrows().await
    );
    assert_eq!(
        m.t.app
            .post("/api/transactions", &tx("api-1", "failed"))
            .await
            .0,
        200
    );
    assert_eq!(borrows().await, vec!["sql-1"]);
}

#[actix_rt::test]
async fn external_sql_writes_reach_the_cache() {
    let m = market(|_| {}).await;
    let owner = m.account(1_000_000_000, 10_000_000_000).await; // HF 4.0
    assert!(m.unhealthy("").await.is_empty());
    // A liquidator bot writes a larger borrow straight into the table.
    let db = m.t.app.db.connect().await;
    let n = db
        .execute("UPDATE positions SET borrow_principal = 50000000000 WHERE owner = $1 AND pool_address = $2", &[&owner, &m.sol.to_string()])
        .await
        .unwrap();
    assert_eq!(n, 1);
    let m_ref = &m;
    assert!(
        eventually(Duration::from_secs(10), async || owners(
            &m_ref.unhealthy("").await
        ) == vec![owner.clone()])
        .await
    );
    // An external indexer inserts a whole new underwater account.
    let stranger = Pubkey::new_unique().to_string();
    db.execute(
        "INSERT INTO positions (cluster, position_address, pool_address, owner, deposit_shares, borrow_principal, deposit_idx_snap, borrow_idx_snap)
         VALUES ('localnet', $1, $2, $3, 0, 1000000000, 1000000000000000000, 1000000000000000000)",
        &[&Pubkey::new_unique().to_string(), &m.sol.to_string(), &stranger],
    )
    .await
    .unwrap();
    assert!(
        eventually(Duration::from_secs(10), async || m_ref
            .unhealthy("")
            .await
            .iter()
            .any(|r| r["owner"] == stranger))
        .await
    );
    // ... whose stored health factor the cache then writes (debt only: 0).
    let db_ref = &db;
    let s_ref = &stranger;
    assert!(
        eventually(Duration::from_secs(10), async || {
            db_ref
                .query_one(
                    "SELECT health_factor_wad::text FROM positions WHERE owner = $1",
                    &[s_ref],
                )
                .await
                .unwrap()
                .get::<_, String>(0)
                == "0"
        })
        .await
    );
    // And a price written straight into pools re-scores the pool's owners.
    db.execute(
        "UPDATE pools SET oracle_price = 1 WHERE pool_address = $1",
        &[&m.sol.to_string()],
    )
    .await
    .unwrap();
    assert!(
        eventually(Duration::from_secs(10), async || !m_ref
            .unhealthy("")
            .await
            .iter()
            .any(|r| r["owner"] == owner))
        .await
    );
    // A deleted position leaves the feed.
    db.execute("DELETE FROM positions WHERE owner = $1", &[&stranger])
        .await
        .unwrap();
    assert!(
        eventually(Duration::from_secs(10), async || m_ref
            .unhealthy("")
            .await
            .is_empty())
        .await
    );
}

#[actix_rt::test]
async fn a_second_replica_writing_the_same_database_reaches_this_cache() {
    let m = market(|_| {}).await;
    // Replica B: the real binary, same database and chain.
    let replica = crate::fixtures::replicas::second_replica(&m).await;
    let b = replica.base.clone();
    let http = reqwest::Client::new();

    // An underwater account, synced through replica B only.
    let owner = Pubkey::new_unique();
    m.t.put_position(&m.usdc, &owner, 100_000_000, 0).await;
    m.t.put_position(&m.sol, &owner, 0, 10_000_000_000).await;
    for pool in [m.usdc, m.sol] {
        let res = http
            .post(format!("{b}/api/positions/sync"))
            .json(&json!({ "pool_address": pool.to_string(), "user": owner.to_string() }))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 200);
    }
    // Replica A (this test's app) sees it from its own cache.
    let m_ref = &m;
    let found = eventually(Duration::from_secs(10), async || {
        owners(&m_ref.unhealthy("").await) == vec![owner.to_string()]
    })
    .await;
    drop(replica);
    assert!(found, "replica A's feed reflects replica B's write");
}

#[actix_rt::test]
async fn the_stream_announces_start_update_and_stop() {
    let mut m = market(|_| {}).await;
    let already = m.account(500_000_000, 40_000_000_000).await; // 0.5, under water before subscribing
    let mut res =
        m.t.app
            .http
            .get(m.t.app.url("/api/positions/unhealthy/stream"))
            .send()
            .await
            .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut buffer = String::new();
    let first = read_events(&mut res, &mut buffer, 1, Duration::from_secs(10)).await;
    assert_eq!(
        first[0].0, "candidate_start",
        "snapshot of owners already under water"
    );
    assert_eq!(first[0].1["owner"], already);
    assert_eq!(first[0].1["positions"].as_array().unwrap().len(), 2);

    let fresh = m.account(1_000_000_000, 45_000_000_000).await; // 0.888: start
    let events = read_events(&mut res, &mut buffer, 1, Duration::from_secs(10)).await;
    let start = events
        .iter()
        .find(|(n, d)| n == "candidate_start" && d["owner"] == fresh);
    assert!(start.is_some(), "{events:?}");
    assert_eq!(
        start.unwrap().1["account_health_factor_wad"],
        (800 * WAD / 900).to_string()
    );

    m.set_sol_price(21 * USD).await; // both change while still under water: updates
    let events = read_events(&mut res, &mut buffer, 2, Duration::from_secs(10)).await;
    assert!(
        events
            .iter()
            .any(|(n, d)| n == "candidate_update" && d["owner"] == fresh),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|(n, d)| n == "candidate_update" && d["owner"] == already),
        "{events:?}"
    );

    m.set_sol_price(5 * USD).await; // both recover: stops
    let events = read_events(&mut res, &mut buffer, 2, Duration::from_secs(10)).await;
    let stops: Vec<_> = events
        .iter()
        .filter(|(n, _)| n == "candidate_stop")
        .map(|(_, d)| d["owner"].as_str().unwrap().to_string())
        .collect();
    assert!(
        stops.contains(&fresh) && stops.contains(&already),
        "{events:?}"
    );
}

#[actix_rt::test]
async fn evicted_owners_are_still_scored_correctly() {
    // Room for two healthy owners only.
    let mut m = market(|c| c.cache.max_owners = 2).await;
    let mut healthy = Vec::new();
    for _ in 0..5 {
        healthy.push(m.account(1_000_000_000, 10_000_000_000).await); // HF 4.0
    }
    // Detail of an owner pushed out of the LRU is loaded back, not empty.
    let (_, detail) =
        m.t.app
            .get(&format!("/api/positions/{}/detail", healthy[0]))
            .await;
    assert_eq!(detail["positions"].as_array().unwrap().len(), 2);
    assert_eq!(
        detail["positions"][0]["health_factor_wad"],
        (4 * WAD).to_string()
    );
    // A price move that sinks all five is seen for every one of them, resident or not.
    m.set_sol_price(100 * USD).await; // HF 800/1000 = 0.8
    let m_ref = &m;
    assert!(
        eventually(Duration::from_secs(10), async || owners(
            &m_ref.unhealthy("?limit=200").await
        )
        .len()
            == 5)
        .await
    );
    let mut listed = owners(&m.unhealthy("?limit=200").await);
    listed.sort();
    healthy.sort();
    assert_eq!(listed, healthy);
}
