//! Chain rows over time, against surfpool: slot safety (an older read never
//! overwrites a newer row), the background refresh with no API call, and the
//! decimals repair of legacy rows (docs/design.md §4.7 to 4.12, docs/design.md §2 and §5).

use std::time::Duration;

use lendex::domain::accounts::*;
use lendex::domain::pubkey::Pubkey;
use serde_json::json;

use crate::chain_support::*;
use crate::common::*;

#[actix_rt::test]
async fn older_reads_never_overwrite_newer_rows() {
    let t = ChainApp::start().await;
    let (pool, mut data) = t.create_and_register(6, Some(100_000_000), Some(-8)).await;
    let user = Wallet::new().pubkey();
    t.put_position(&pool, &key(&user), 10, 0).await;
    let body = json!({ "pool_address": pool.to_string(), "user": user });
    assert_eq!(t.app.post("/api/positions/sync", &body).await.0, 200);

    // Pretend the stored rows came from a read far in the future of this chain.
    let db = t.app.db.connect().await;
    db.execute("UPDATE pools SET slot = 4000000000000", &[])
        .await
        .unwrap();
    db.execute("UPDATE positions SET slot = 4000000000000", &[])
        .await
        .unwrap();
    data.total_deposits = 1;
    t.chain.set(&pool, &t.program, &encode_pool(&data)).await;
    t.put_position(&pool, &key(&user), 999, 0).await;
    assert_eq!(t.sync_pool(&pool).await.0, 200);
    assert_eq!(t.app.post("/api/positions/sync", &body).await.0, 200);
    let row = db
        .query_one("SELECT total_deposits::text FROM pools", &[])
        .await
        .unwrap();
    assert_eq!(
        row.get::<_, String>(0),
        "1000000000",
        "older read did not overwrite the pool"
    );
    let row = db
        .query_one("SELECT deposit_shares::text FROM positions", &[])
        .await
        .unwrap();
    assert_eq!(
        row.get::<_, String>(0),
        "10",
        "older read did not overwrite the position"
    );
    // Nor delete it.
    let (position, _) = position_account(&t.program, &pool, &key(&user), 0, 0);
    t.chain.remove(&position).await;
    assert_eq!(
        t.app.post("/api/positions/sync", &body).await.1["exists"],
        false
    );
    let n: i64 = db
        .query_one("SELECT count(*) FROM positions", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 1);
    // Once the stored read is older again, reads apply.
    db.execute("UPDATE pools SET slot = 0", &[]).await.unwrap();
    assert_eq!(t.sync_pool(&pool).await.0, 200);
    let row = db
        .query_one("SELECT total_deposits::text FROM pools", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "1");
}

#[actix_rt::test]
async fn background_refresh_discovers_updates_and_removes_without_api_calls() {
    let t = ChainApp::start_with(|c| c.sync.interval_seconds = 1).await;
    let (pool, mut data) = t.create_and_register(6, Some(100_000_000), Some(-8)).await;
    let (a, b) = (Pubkey::new_unique(), Pubkey::new_unique());
    t.put_position(&pool, &a, 100, 0).await;
    let b_position = t.put_position(&pool, &b, 200, 50).await;
    // Noise the scan must ignore: a position of another pool.
    let (other_pool, _) = t.create_pool(6, None, None).await;
    t.put_position(&other_pool, &a, 1, 0).await;
    let db = t.app.db.connect().await;
    let count = async || -> i64 {
        db.query_one("SELECT count(*) FROM positions", &[])
            .await
            .unwrap()
            .get(0)
    };

    assert!(
        eventually(Duration::from_secs(20), async || count().await == 2).await,
        "positions discovered"
    );

    // On chain: a new position, a closed one, a changed pool.
    let c = Pubkey::new_unique();
    t.put_position(&pool, &c, 300, 0).await;
    t.chain.remove(&b_position).await;
    data.oracle_price = Some(90_000_000);
    data.total_deposits = 42;
    t.chain.set(&pool, &t.program, &encode_pool(&data)).await;
    let owners = async || -> Vec<String> {
        db.query("SELECT owner FROM positions ORDER BY owner", &[])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    let mut expected = vec![a.to_string(), c.to_string()];
    expected.sort();
    assert!(
        eventually(Duration::from_secs(20), async || owners().await == expected).await,
        "{:?}",
        owners().await
    );
    let price = async || -> Option<i64> {
        db.query_one("SELECT oracle_price FROM pools", &[])
            .await
            .unwrap()
            .get(0)
    };
    assert!(
        eventually(Duration::from_secs(20), async || price().await
            == Some(90_000_000))
        .await
    );
    let (_, health) = t.app.get("/api/health").await;
    assert_eq!(health["checks"]["sync"]["ok"], true, "{health}");
    assert!(health["checks"]["sync"]["slot"].as_u64().unwrap() > 0);
    assert!(health["checks"]["sync"]["lastRefreshAt"].is_string());
}

#[actix_rt::test]
async fn repair_decimals_fixes_legacy_rows_and_the_feed_follows() {
    let t = ChainApp::start().await;
    // SOL (9 decimals, $20) collateral, USDC (6) debt: HF 45 x 20 x 0.8 / 1000 = 0.72, under water.
    let (usdc, _) = t.create_and_register(6, Some(100_000_000), Some(-8)).await;
    let (sol, _) = t
        .create_and_register(9, Some(2_000_000_000), Some(-8))
        .await;
    let owner = Pubkey::new_unique();
    t.put_position(&sol, &owner, 45_000_000_000, 0).await;
    t.put_position(&usdc, &owner, 0, 1_000_000_000).await;
    for pool in [usdc, sol] {
        let body = json!({ "pool_address": pool.to_string(), "user": owner.to_string() });
        assert_eq!(t.app.post("/api/positions/sync", &body).await.0, 200);
    }
    assert_eq!(
        t.app.get("/api/positions/unhealthy").await.1["positions"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // A legacy row: USDC stored with the old default of 9 decimals values the
    // debt 1000x lower and hides the underwater account.
    let db = t.app.db.connect().await;
    db.execute(
        "UPDATE pools SET decimals = 9 WHERE pool_address = $1",
        &[&usdc.to_string()],
    )
    .await
    .unwrap();
    let app = &t.app;
    assert!(
        eventually(Duration::from_secs(10), async || app
            .get("/api/positions/unhealthy")
            .await
            .1["positions"]
            == json!([]))
        .await
    );

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lendex"))
        .args(["admin", "repair-decimals"])
        .env("DATABASE_URL", &t.app.db.url)
        .env("RPC_URL", &t.chain.url)
        .env_remove("SUPER_ADMIN_PUBKEY")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains(&format!("{usdc}: decimals 9 -> 6")), "{text}");
    assert!(
        text.contains("2 pools checked, 1 fixed, 0 unreadable"),
        "{text}"
    );
    let decimals: i16 = db
        .query_one(
            "SELECT decimals FROM pools WHERE pool_address = $1",
            &[&usdc.to_string()],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(decimals, 6);
    assert!(
        eventually(Duration::from_secs(10), async || app
            .get("/api/positions/unhealthy")
            .await
            .1["positions"]
            .as_array()
            .unwrap()
            .len()
            == 2)
        .await
    );
    let (_, audit) = t.app.get("/api/admin/audit?action=update_pool").await;
    assert_eq!(audit["entries"][0]["details"]["decimals"], 6);

    // A mint that cannot be read is reported, and the command fails.
    t.chain
        .remove(&key(&db
            .query_one(
                "SELECT token_mint FROM pools WHERE pool_address = $1",
                &[&sol.to_string()],
            )
            .await
            .unwrap()
            .get::<_, String>(0)))
        .await;
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lendex"))
        .args(["admin", "repair-decimals"])
        .env("DATABASE_URL", &t.app.db.url)
        .env("RPC_URL", &t.chain.url)
        .env_remove("SUPER_ADMIN_PUBKEY")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("not a readable SPL mint"));
}
