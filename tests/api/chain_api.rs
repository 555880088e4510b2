//! Pool registration and sync, and position sync, against surfpool, a real
//! Solana RPC (docs/design.md §4.7 to 4.12, docs/design.md §2 and §5). The background refresh
//! and slot safety are in chain_refresh.rs.

use lendex::domain::accounts::*;
use lendex::domain::pubkey::Pubkey;
use lendex::domain::wad::WAD;
use serde_json::json;

use crate::chain_support::*;
use crate::common::*;

#[actix_rt::test]
async fn register_pool_stores_the_decoded_account_and_is_idempotent() {
    let t = ChainApp::start().await;
    let (address, pool) = t.create_pool(6, Some(100_000_000), Some(-8)).await;
    let (status, body) = t.register(&address, &pool).await;
    assert_eq!(
        (status, &body),
        (
            200,
            &json!({ "ok": true, "pool_address": address.to_string(), "created": true, "symbol": "TKN" })
        )
    );

    let (_, list) = t.app.get("/api/pools").await;
    let pools = list["pools"].as_array().unwrap();
    assert_eq!(pools.len(), 1);
    let row = &pools[0];
    assert_eq!(row["pool_address"], address.to_string());
    assert_eq!(row["token_mint"], pool.token_mint.to_string());
    assert_eq!(row["symbol"], "TKN");
    assert_eq!(row["authority"], t.admin.pubkey());
    assert_eq!(row["vault"], pool.vault.to_string());
    assert_eq!(row["pool_bump"], pool.pool_bump);
    assert_eq!(row["paused"], false);
    assert_eq!(row["total_deposits"], "1000000000");
    assert_eq!(row["total_borrows"], "500000000");
    assert_eq!(row["liquidation_threshold_wad"], "800000000000000000");
    assert_eq!(row["slope2_wad"], "750000000000000000");
    assert_eq!(row["flash_fee_bps"], 9);
    assert_eq!(row["oracle_price"], "100000000");
    assert_eq!(row["oracle_conf"], "1000");
    assert_eq!(row["oracle_expo"], -8);
    assert!(row["pyth_price_feed"].is_null());
    assert_eq!(row["created_by"], t.admin.pubkey());
    assert!(row.get("decimals").is_none(), "decimals is internal");
    let db = t.app.db.connect().await;
    let decimals: i16 = db
        .query_one("SELECT decimals FROM pools", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(decimals, 6, "read from the mint, never defaulted");

    // A repeat changes nothing but is audited too.
    let (status, body) = t.register(&address, &pool).await;
    assert_eq!((status, body["created"].clone()), (200, json!(false)));
    let (_, audit) = t.app.get("/api/admin/audit?action=init_pool").await;
    let entries = audit["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0]["target"], address.to_string());
    assert_eq!(entries[0]["actor"], t.admin.pubkey());
    assert_eq!(entries[0]["details"]["created"], false);
    assert_eq!(entries[1]["details"]["created"], true);
    let (_, health) = t.app.get("/api/health").await;
    assert_eq!(health["checks"]["counts"]["pools"], 1);
    assert_eq!(health["checks"]["rpc"]["ok"], true);
    assert!(health["checks"]["rpc"]["slot"].as_u64().unwrap() > 0);
}

#[actix_rt::test]
async fn register_pool_is_checked_against_the_chain() {
    let t = ChainApp::start().await;
    let post = |body: serde_json::Value| {
        let app = &t.app;
        async move { app.post("/api/pools/init", &body).await }
    };
    let signed_body =
        |pool_address: Pubkey, pool: LendingPool, edit: fn(&mut serde_json::Value)| {
            let t = &t;
            async move {
                let (nonce, sig) = t
                    .app
                    .signed(&t.admin, &format!("init_pool:{}", pool.token_mint))
                    .await;
                let mut body = t.init_body(&pool_address, &pool, &nonce, &sig);
                edit(&mut body);
                body
            }
        };

    // Absent on chain.
    let mint = Pubkey::new_unique();
    let (ghost, ghost_pool) = pool_account(&t.program, &t.admin_key(), &mint, None, None);
    assert_eq!(
        post(signed_body(ghost, ghost_pool, |_| {}).await).await,
        (404, error("pool account not found"))
    );

    // Owned by another program.
    let (address, pool) = t.create_pool(6, None, None).await;
    t.chain
        .set(&address, &Pubkey::new_unique(), &encode_pool(&pool))
        .await;
    assert_eq!(
        post(signed_body(address, pool.clone(), |_| {}).await).await,
        (400, error("invalid"))
    );
    // Not a LendingPool (a position's bytes).
    let (_, position) = position_account(&t.program, &address, &t.admin_key(), 1, 0);
    t.chain
        .set(&address, &t.program, &encode_position(&position))
        .await;
    assert_eq!(
        post(signed_body(address, pool.clone(), |_| {}).await).await,
        (400, error("invalid"))
    );
    t.chain.set(&address, &t.program, &encode_pool(&pool)).await;

    // Body fields that differ from the chain.
    let body = signed_body(address, pool.clone(), |b| {
        b["vault"] = json!(Pubkey::new_unique().to_string())
    })
    .await;
    assert_eq!(post(body).await, (400, error("invalid")));
    let body = signed_body(address, pool.clone(), |b| b["vault_bump"] = json!(1)).await;
    let expected = if pool.vault_bump == 1 { 200 } else { 400 };
    assert_eq!(post(body).await.0, expected);
    // A pool address that is not PDA(["pool", mint]).
    let (_, other) = t.create_pool(6, None, None).await;
    let odd = Pubkey::new_unique();
    t.chain.set(&odd, &t.program, &encode_pool(&other)).await;
    assert_eq!(
        post(signed_body(odd, other.clone(), |_| {}).await).await,
        (400, error("invalid"))
    );

    // The mint is not a mint.
    let (address2, pool2) = t.create_pool(6, None, None).await;
    t.chain
        .set(&pool2.token_mint, &Pubkey::new_unique(), &encode_mint(6, 1))
        .await;
    assert_eq!(
        post(signed_body(address2, pool2.clone(), |_| {}).await).await,
        (400, error("invalid"))
    );

    // On-chain authority is someone else: 401.
    let stranger = Pubkey::new_unique();
    let mint3 = Pubkey::new_unique();
    t.chain
        .set(&mint3, &token_program(), &encode_mint(9, 1))
        .await;
    let (address3, pool3) = pool_account(&t.program, &stranger, &mint3, None, None);
    t.chain
        .set(&address3, &t.program, &encode_pool(&pool3))
        .await;
    let body = signed_body(address3, pool3.clone(), |b| {
        b["authority"] = b["actor"].clone()
    })
    .await;
    assert_eq!(post(body).await, (401, error("not authorized")));

    // A wallet that is not an admin, even as the on-chain authority.
    let outsider = Wallet::new();
    let mint4 = Pubkey::new_unique();
    t.chain
        .set(&mint4, &token_program(), &encode_mint(9, 1))
        .await;
    let (address4, pool4) = pool_account(&t.program, &key(&outsider.pubkey()), &mint4, None, None);
    t.chain
        .set(&address4, &t.program, &encode_pool(&pool4))
        .await;
    let (nonce, sig) = t.app.signed(&outsider, &format!("init_pool:{mint4}")).await;
    let mut body = t.init_body(&address4, &pool4, &nonce, &sig);
    body["actor"] = json!(outsider.pubkey());
    assert_eq!(post(body).await, (401, error("not authorized")));

    // Signed for another mint.
    let (nonce, sig) = t.app.signed(&t.admin, &format!("init_pool:{mint4}")).await;
    let body = t.init_body(&address2, &pool2, &nonce, &sig);
    assert_eq!(post(body).await, (401, error("bad signature")));

    // Missing and malformed fields.
    let (nonce, sig) = t
        .app
        .signed(&t.admin, &format!("init_pool:{}", pool.token_mint))
        .await;
    let full = t.init_body(&address, &pool, &nonce, &sig);
    for field in [
        "actor",
        "nonce",
        "signature",
        "pool_address",
        "token_mint",
        "authority",
        "vault",
        "pool_bump",
        "authority_bump",
        "vault_bump",
        "init_signature",
    ] {
        let mut body = full.clone();
        body.as_object_mut().unwrap().remove(field);
        assert_eq!(
            post(body).await,
            (400, error("missing fields")),
            "without {field}"
        );
    }
    for (field, value) in [
        ("pool_bump", json!(256)),
        ("pool_bump", json!("1")),
        ("token_mint", json!("zz")),
        ("symbol", json!(5)),
    ] {
        let mut body = full.clone();
        body[field] = value;
        assert_eq!(post(body).await, (400, error("invalid")), "{field}");
    }
    let (_, list) = t.app.get("/api/pools").await;
    let n = list["pools"].as_array().unwrap().len();
    assert_eq!(
        n,
        if pool.vault_bump == 1 { 1 } else { 0 },
        "no refused registration was stored"
    );
}

#[actix_rt::test]
async fn pool_sync_refreshes_registered_pools_only() {
    let t = ChainApp::start().await;
    assert_eq!(
        t.app.post("/api/pools/sync", &json!({})).await,
        (400, error("pool_address required"))
    );
    assert_eq!(
        t.app
            .post("/api/pools/sync", &json!({ "pool_address": "" }))
            .await,
        (400, error("pool_address required"))
    );
    assert_eq!(
        t.app
            .post("/api/pools/sync", &json!({ "pool_address": "abc" }))
            .await,
        (400, error("bad pubkey: String is the wrong size"))
    );
    assert_eq!(
        t.app
            .post(
                "/api/pools/sync",
                &json!({ "pool_address": "0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl" })
            )
            .await,
        (400, error("bad pubkey: Invalid Base58 string"))
    );
    // On chain but never registered: not in the index, and sync will not put it there.
    let (unlisted, _) = t.create_pool(6, None, None).await;
    let res = t.sync_pool(&unlisted).await;
    assert_eq!(res, (404, error("pool account not found")));
    assert_eq!(t.app.get("/api/pools").await.1["pools"], json!([]));

    // Registered without a symbol; the chain changes; sync picks it up and fills the symbol.
    let (address, mut pool) = t.create_pool(8, Some(5_000_000_000_000), Some(-8)).await;
    let (nonce, sig) = t
        .app
        .signed(&t.admin, &format!("init_pool:{}", pool.token_mint))
        .await;
    let mut body = t.init_body(&address, &pool, &nonce, &sig);
    body["symbol"] = json!(null);
    assert_eq!(t.app.post("/api/pools/init", &body).await.0, 200);
    pool.paused = true;
    pool.total_borrows = 777;
    pool.oracle_price = Some(6_000_000_000_000);
    pool.pyth_price_feed = Some(Pubkey::new_unique());
    t.chain.set(&address, &t.program, &encode_pool(&pool)).await;
    let res = t
        .app
        .post(
            "/api/pools/sync",
            &json!({ "pool_address": address.to_string(), "symbol": "WBTC" }),
        )
        .await;
    assert_eq!(
        res,
        (
            200,
            json!({ "ok": true, "pool_address": address.to_string() })
        )
    );
    let (_, list) = t.app.get("/api/pools").await;
    let row = &list["pools"][0];
    assert_eq!(
        (row["paused"].clone(), row["total_borrows"].clone()),
        (json!(true), json!("777"))
    );
    assert_eq!(row["oracle_price"], "6000000000000");
    assert_eq!(
        row["pyth_price_feed"],
        pool.pyth_price_feed.unwrap().to_string()
    );
    assert_eq!(row["symbol"], "WBTC");
    // The symbol is never overwritten once set.
    t.app
        .post(
            "/api/pools/sync",
            &json!({ "pool_address": address.to_string(), "symbol": "OTHER" }),
        )
        .await;
    assert_eq!(
        t.app.get("/api/pools").await.1["pools"][0]["symbol"],
        "WBTC"
    );

    // Taken over by another program: invalid. Gone from chain: 404. The row stays.
    t.chain
        .set(&address, &Pubkey::new_unique(), &encode_pool(&pool))
        .await;
    assert_eq!(t.sync_pool(&address).await, (400, error("invalid")));
    t.chain.remove(&address).await;
    assert_eq!(
        t.sync_pool(&address).await,
        (404, error("pool account not found"))
    );
    assert_eq!(
        t.app.get("/api/pools").await.1["pools"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[actix_rt::test]
async fn position_sync_upserts_scores_and_removes() {
    let t = ChainApp::start().await;
    // USDC-like (6 decimals, $1) and a volatile token (9 decimals, $20).
    let (usdc, _) = t.create_and_register(6, Some(100_000_000), Some(-8)).await;
    let (sol, _) = t
        .create_and_register(9, Some(2_000_000_000), Some(-8))
        .await;
    let owner = Wallet::new();
    let owner_key = key(&owner.pubkey());
    // Deposit 1000 USDC, borrow 45 SOL-like tokens ($900): HF = 1000*0.8/900 = 0.888..
    let usdc_position = t.put_position(&usdc, &owner_key, 1_000_000_000, 0).await;
    t.put_position(&sol, &owner_key, 0, 45_000_000_000).await;

    let res = t
        .app
        .post(
            "/api/positions/sync",
            &json!({ "pool_address": usdc.to_string(), "user": owner.pubkey() }),
        )
        .await;
    assert_eq!(
        res,
        (
            200,
            json!({ "ok": true, "exists": true, "position_address": usdc_position.to_string() })
        )
    );
    // Only the deposit is known: no debt yet.
    let (_, list) = t
        .app
        .get(&format!("/api/positions/{}", owner.pubkey()))
        .await;
    assert_eq!(
        list["positions"][0]["health_factor_wad"],
        u128::MAX.to_string()
    );
    let res = t
        .app
        .post(
            "/api/positions/sync",
            &json!({ "pool_address": sol.to_string(), "user": owner.pubkey() }),
        )
        .await;
    assert_eq!(res.0, 200);

    let (status, list) = t
        .app
        .get(&format!("/api/positions/{}", owner.pubkey()))
        .await;
    assert_eq!(status, 200);
    let rows = list["positions"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let expected_hf = (800 * WAD / 900).to_string();
    for row in rows {
        assert_eq!(
            row["health_factor_wad"], expected_hf,
            "account-level value on every row"
        );
        assert_eq!(row["owner"], owner.pubkey());
        assert!(
            chrono::DateTime::parse_from_rfc3339(row["last_synced_at"].as_str().unwrap()).is_ok()
        );
    }
    // Newest sync first.
    assert_eq!(rows[0]["pool_address"], sol.to_string());
    assert_eq!(rows[0]["borrow_principal"], "45000000000");
    assert_eq!(rows[1]["deposit_shares"], "1000000000");
    assert_eq!(rows[1]["deposit_idx_snap"], WAD.to_string());

    // The borrow is repaid and the position closed on chain: the row goes, HF recovers.
    let (sol_position, _) = position_account(&t.program, &sol, &owner_key, 0, 0);
    t.chain.remove(&sol_position).await;
    let res = t
        .app
        .post(
            "/api/positions/sync",
            &json!({ "pool_address": sol.to_string(), "user": owner.pubkey() }),
        )
        .await;
    assert_eq!(
        res,
        (
            200,
            json!({ "ok": true, "exists": false, "position_address": sol_position.to_string() })
        )
    );
    let (_, list) = t
        .app
        .get(&format!("/api/positions/{}", owner.pubkey()))
        .await;
    let rows = list["positions"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["health_factor_wad"], u128::MAX.to_string());
    // Syncing a position that never existed answers exists=false and writes nothing.
    let nobody = Wallet::new().pubkey();
    let res = t
        .app
        .post(
            "/api/positions/sync",
            &json!({ "pool_address": usdc.to_string(), "user": nobody }),
        )
        .await;
    assert_eq!((res.0, res.1["exists"].clone()), (200, json!(false)));
    assert_eq!(
        t.app.get(&format!("/api/positions/{nobody}")).await.1,
        json!({ "positions": [] })
    );
}

#[actix_rt::test]
async fn position_sync_errors() {
    let t = ChainApp::start().await;
    let (pool, _) = t.create_and_register(6, Some(100_000_000), Some(-8)).await;
    let user = Wallet::new().pubkey();
    let user_key = key(&user);
    assert_eq!(
        t.app
            .post("/api/positions/sync", &json!({ "user": user }))
            .await,
        (400, error("missing fields"))
    );
    assert_eq!(
        t.app
            .post(
                "/api/positions/sync",
                &json!({ "pool_address": pool.to_string() })
            )
            .await,
        (400, error("missing fields"))
    );
    assert_eq!(
        t.app
            .post(
                "/api/positions/sync",
                &json!({ "pool_address": pool.to_string(), "user": "nope" })
            )
            .await,
        (400, error("invalid"))
    );
    let (unregistered, _) = t.create_pool(6, None, None).await;
    assert_eq!(
        t.app
            .post(
                "/api/positions/sync",
                &json!({ "pool_address": unregistered.to_string(), "user": user })
            )
            .await,
        (404, error("pool account not found"))
    );
    // The position account owned by another program.
    let (position, data) = position_account(&t.program, &pool, &user_key, 5, 0);
    t.chain
        .set(&position, &Pubkey::new_unique(), &encode_position(&data))
        .await;
    let body = json!({ "pool_address": pool.to_string(), "user": user });
    assert_eq!(
        t.app.post("/api/positions/sync", &body).await,
        (400, error("invalid"))
    );
    // Owned by the program but recording another owner.
    let other = UserPosition {
        owner: Pubkey::new_unique(),
        ..data.clone()
    };
    t.chain
        .set(&position, &t.program, &encode_position(&other))
        .await;
    assert_eq!(
        t.app.post("/api/positions/sync", &body).await,
        (400, error("invalid"))
    );
    // The pool account taken over by another program.
    t.chain
        .set(&position, &t.program, &encode_position(&data))
        .await;
    let pool_bytes = {
        let db = t.app.db.connect().await;
        db.query_one("SELECT token_mint FROM pools", &[])
            .await
            .unwrap()
            .get::<_, String>(0)
    };
    let (_, pool_data) = pool_account(
        &t.program,
        &t.admin_key(),
        &key(&pool_bytes),
        Some(100_000_000),
        Some(-8),
    );
    t.chain
        .set(&pool, &Pubkey::new_unique(), &encode_pool(&pool_data))
        .await;
    assert_eq!(
        t.app.post("/api/positions/sync", &body).await,
        (400, error("invalid"))
    );
    assert_eq!(
        t.app.get(&format!("/api/positions/{user}")).await.1,
        json!({ "positions": [] })
    );
    assert_eq!(
        t.app.get("/api/positions/not-a-key").await,
        (400, error("invalid"))
    );
}

/// Every change reaches the engine through the change log, in commit order:
/// a replica's own write (read at once, before the write is answered, so the
/// writer reads its own write) and a change by any other writer (SQL here,
/// as an external indexer's), heard by its NOTIFY.
#[actix_rt::test]
async fn own_writes_and_others_reach_the_engine_through_the_change_log() {
    let t = ChainApp::start_with(|c| c.sync.interval_seconds = 0).await;
    let (pool, _) = t.create_and_register(6, Some(100_000_000), Some(-8)).await;
    let user = Wallet::new().pubkey();
    t.put_position(&pool, &key(&user), 10, 0).await;
    let app = &t.app;
    let shares = async || -> serde_json::Value {
        app.get(&format!("/api/positions/{user}")).await.1["positions"][0]["deposit_shares"].clone()
    };
    let db = app.db.connect().await;
    let logged = async || -> i64 {
        db.query_one(
            "SELECT count(*) FROM feed_changes WHERE image->>'owner' = $1",
            &[&user],
        )
        .await
        .unwrap()
        .get(0)
    };

    let sync = json!({ "pool_address": pool.to_string(), "user": user });
    assert_eq!(app.post("/api/positions/sync", &sync).await.0, 200);
    assert_eq!(shares().await, json!("10"), "read your own write");
    assert_eq!(logged().await, 1, "the write is in the change log");

    db.execute(
        "UPDATE positions SET deposit_shares = 11 WHERE owner = $1",
        &[&user],
    )
    .await
    .unwrap();
    assert!(
        eventually(std::time::Duration::from_secs(5), async || shares().await
            == json!("11"))
        .await,
        "another writer's change was not heard"
    );
    assert_eq!(logged().await, 2);
}
