//! The batched writer: a run of transaction records is one multi-row
//! statement, a bad write still fails alone, writes of one signature in one
//! batch end as if applied in arrival order, and a stalled table answers 503
//! within database.write_timeout_ms; a stalled lane never holds up the others.

use std::time::{Duration, Instant};

use futures_util::future::join_all;
use serde_json::{Value, json};

use crate::common::*;

fn record(signature: &str, wallet: &str) -> Value {
    json!({ "signature": signature, "wallet": wallet, "action": "deposit", "amount": "5" })
}

async fn tx_log_lane(app: &TestApp) -> Value {
    let lanes = app.get("/api/health").await.1["checks"]["writer"]["lanes"].clone();
    lanes
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["lane"] == "tx_log")
        .cloned()
        .unwrap()
}

/// Holds the tx_log lane in its current batch: another session inserts
/// `signature` uncommitted, and a POST of the same signature waits for it.
/// Returns that session and the waiting POST; rolling the session back lets
/// the lane go on, with everything queued meanwhile in its next batch.
async fn hold_tx_log_lane(
    app: &TestApp,
    signature: &str,
    wallet: &str,
) -> (
    tokio_postgres::Client,
    tokio::task::JoinHandle<(u16, Value)>,
) {
    let other = app.db.connect().await;
    other.batch_execute("BEGIN").await.unwrap();
    other
        .execute(
            "INSERT INTO tx_log (cluster, signature, wallet, action, status) VALUES ('localnet', $1, $2, 'deposit', 'confirmed')",
            &[&signature, &wallet],
        )
        .await
        .unwrap();
    let (http, url, body) = (
        app.http.clone(),
        app.url("/api/transactions"),
        record(signature, wallet),
    );
    let held = tokio::spawn(async move {
        let res = http.post(url).json(&body).send().await.unwrap();
        (res.status().as_u16(), res.json::<Value>().await.unwrap())
    });
    // The lane is inside that write once its batch has started.
    assert!(
        eventually(
            Duration::from_secs(5),
            async || tx_log_lane(app).await["batches"] == 1
        )
        .await
    );
    (other, held)
}

#[actix_rt::test]
async fn a_batch_with_one_bad_write_fails_it_alone() {
    let app = spawn_app().await;
    let wallet = Wallet::new().pubkey();
    // A constraint the API does not check: only the database refuses this row.
    let db = app.db.connect().await;
    db.batch_execute(
        "ALTER TABLE tx_log ADD CONSTRAINT no_boom CHECK (error_msg IS DISTINCT FROM 'boom')",
    )
    .await
    .unwrap();
    let (other, held) = hold_tx_log_lane(&app, "held", &wallet).await;
    let mut bodies: Vec<Value> = (0..40).map(|i| record(&format!("s{i}"), &wallet)).collect();
    bodies[17]["error_msg"] = json!("boom");
    let sending = join_all(bodies.iter().map(|b| app.post("/api/transactions", b)));
    let release = async {
        // IndexSnapshot queues behind the held write, then the lane goes on.
        tokio::time::sleep(Duration::from_millis(700)).await;
        other.batch_execute("ROLLBACK").await.unwrap();
    };
    let (answers, ()) = futures_util::join!(sending, release);
    assert_eq!(held.await.unwrap().0, 200);
    for (i, (status, body)) in answers.iter().enumerate() {
        if i == 17 {
            assert_eq!(*status, 500, "its own error: {body}");
            assert_eq!(body["error"], "internal error");
        } else {
            assert_eq!(*status, 200, "s{i}: {body}");
        }
    }
    let rows: i64 = db
        .query_one("SELECT count(*) FROM tx_log WHERE signature LIKE 's%'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(rows, 39, "every other write committed");
    let lane = tx_log_lane(&app).await;
    assert!(
        lane["largestBatch"].as_u64().unwrap() >= 40,
        "one batch: {lane}"
    );
}

#[actix_rt::test]
async fn two_writes_of_one_signature_in_one_batch_keep_the_later() {
    let app = spawn_app().await;
    let wallet = Wallet::new().pubkey();
    let (other, held) = hold_tx_log_lane(&app, "held", &wallet).await;
    let mut first = record("twice", &wallet);
    first["status"] = json!("pending");
    let mut later = record("twice", &wallet);
    later["status"] = json!("failed");
    later["error_msg"] = json!("slippage");
    later["amount"] = json!("999");
    let (a, b, ()) = futures_util::join!(
        app.post("/api/transactions", &first),
        async {
            // Arrives second.
            tokio::time::sleep(Duration::from_millis(200)).await;
            app.post("/api/transactions", &later).await
        },
        async {
            tokio::time::sleep(Duration::from_millis(700)).await;
            other.batch_execute("ROLLBACK").await.unwrap();
        }
    );
    assert_eq!(held.await.unwrap().0, 200);
    assert_eq!(a.0, 200, "{}", a.1);
    assert_eq!(b.0, 200, "{}", b.1);
    assert_eq!(a.1["id"], b.1["id"], "one row");
    let (_, list) = app.get(&format!("/api/transactions?wallet={wallet}")).await;
    let row = list["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["signature"] == "twice")
        .cloned()
        .unwrap();
    // The first write inserted (its amount stays), the later one updated.
    assert_eq!(row["status"], "failed");
    assert_eq!(row["error_msg"], "slippage");
    assert_eq!(row["amount"], "5");
    assert!(tx_log_lane(&app).await["largestBatch"].as_u64().unwrap() >= 2);
}

#[actix_rt::test]
async fn a_locked_table_answers_503_within_the_write_bound() {
    let app = spawn_app_with(|c| c.database.write_timeout_ms = 3_000).await;
    let wallet = Wallet::new().pubkey();
    let other = app.db.connect().await;
    other
        .batch_execute("BEGIN; LOCK TABLE tx_log IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();

    let started = Instant::now();
    let stalled = app
        .post("/api/transactions", &record("stalled", &wallet))
        .await;
    assert_eq!(stalled, (503, error("database unavailable")));
    assert!(
        started.elapsed() < Duration::from_millis(3_000 + 1_500),
        "answered after {:?}",
        started.elapsed()
    );

    other.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(
        app.post("/api/transactions", &record("after", &wallet))
            .await
            .0,
        200,
        "recovers by itself once the lock is gone"
    );
}

/// The lanes do not wait for each other: while the tx_log lane is inside a
/// write that waits for a lock, a signed add_admin (the auth lane's nonce, the
/// admin lane's allowlist and audit rows) is answered. The bound is long (a
/// 24 s lock share), so the order proves independence, not the machine's speed.
#[actix_rt::test]
async fn a_locked_table_does_not_hold_up_the_other_lanes() {
    let app = spawn_app_with(|c| c.database.write_timeout_ms = 60_000).await;
    let wallet = Wallet::new().pubkey();
    let (other, held) = hold_tx_log_lane(&app, "held", &wallet).await;

    let new_admin = Wallet::new();
    let action = format!("add_admin:{}:pool_admin", new_admin.pubkey());
    let (nonce, signature) = app.signed(&app.root, &action).await;
    let body = json!({ "actor": app.root.pubkey(), "nonce": nonce, "signature": signature,
                       "pubkey": new_admin.pubkey(), "role": "pool_admin" });
    assert_eq!(
        app.post("/api/admin/allowlist", &body).await,
        (200, json!({ "ok": true }))
    );
    assert!(
        !held.is_finished(),
        "the held record was answered before the lock went: {:?}",
        held.await
    );

    other.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(
        held.await.unwrap().0,
        200,
        "the waiting record commits once the lock is gone"
    );
}

/// The auth lane's batch forms against the real table: issues in one INSERT,
/// spends in one DELETE; a nonce named twice in one batch is spent once, by
/// its first caller, and only for its own action.
#[actix_rt::test]
async fn batched_nonce_spends_are_single_use() {
    use lendex::store::nonces::{ConsumeNonce, IssueNonce};
    use lendex::store::writes::WriteCommand;
    let app = spawn_app().await;
    let pool = app.db.pool();
    let wallet = Wallet::new().pubkey();
    let issue = |n: &str| IssueNonce {
        pubkey: wallet.clone(),
        nonce: n.repeat(32),
        action: "add_admin:x:pool_admin".into(),
        ttl_ms: 60_000,
        keep: 2,
    };
    let issued = [issue("a"), issue("b"), issue("c")];
    let mut client = pool.get().await.unwrap();
    let tx = client.transaction().await.unwrap();
    let expiries = IssueNonce::apply_all(issued.iter().collect(), &tx)
        .await
        .unwrap();
    assert_eq!(expiries.len(), 3);
    tx.commit().await.unwrap();
    // keep = 2: the oldest of the three was dropped.
    let spend = |n: &str, action: &str| ConsumeNonce {
        pubkey: wallet.clone(),
        nonce: n.repeat(32),
        action: action.into(),
    };
    let a = "add_admin:x:pool_admin";
    let spends = [
        spend("b", a),
        spend("b", a),
        spend("c", "revoke_admin:x"),
        spend("c", a),
        spend("a", a),
        spend("b", a),
    ];
    let tx = client.transaction().await.unwrap();
    let spent = ConsumeNonce::apply_all(spends.iter().collect(), &tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(spent, [true, false, false, true, false, false]);
}

/// The admin lane's batch form: a wallet added twice in one batch ends with
/// its later entry, and every add has its audit entry, in arrival order.
#[actix_rt::test]
async fn batched_admin_adds_apply_in_arrival_order() {
    use lendex::store::writes::{AddAdmin, WriteCommand};
    let app = spawn_app().await;
    let pool = app.db.pool();
    let (twice, once) = (Wallet::new().pubkey(), Wallet::new().pubkey());
    let add = |pubkey: &str, role: &str, label: &str| AddAdmin {
        pubkey: pubkey.to_string(),
        role: lendex::domain::enums::Role::parse(role).unwrap(),
        label: Some(label.into()),
        actor: app.root.pubkey(),
    };
    let adds = [
        add(&twice, "pool_admin", "first"),
        add(&once, "pool_admin", "only"),
        add(&twice, "super_admin", "second"),
    ];
    let mut client = pool.get().await.unwrap();
    let tx = client.transaction().await.unwrap();
    AddAdmin::apply_all(adds.iter().collect(), &tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let row = client
        .query_one(
            "SELECT role, label FROM pool_admins WHERE pubkey = $1",
            &[&twice],
        )
        .await
        .unwrap();
    assert_eq!(
        (row.get::<_, &str>(0), row.get::<_, &str>(1)),
        ("super_admin", "second")
    );
    let audit: Vec<(String, String)> = client
        .query(
            "SELECT target, details->>'label' FROM audit_log WHERE action = 'add_admin' AND actor = $1 ORDER BY id",
            &[&app.root.pubkey()],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        audit,
        [
            (twice.clone(), "first".to_string()),
            (once.clone(), "only".to_string()),
            (twice.clone(), "second".to_string())
        ]
    );
}

/// Heavy writes queued together commit one per transaction: seven pools'
/// 10,000-row reconciles once shared a batch that overran its time share on
/// every try, and the index never filled. Light writes still group.
#[actix_rt::test]
async fn heavy_writes_queued_together_are_not_one_batch() {
    use lendex::actors::db_writer::{Writers, write};
    use lendex::store::chain_writes::SetHealthFactors;
    let app = spawn_app().await;
    let mut cfg = lendex::config::Config::defaults().database;
    cfg.url = app.db.url.clone();
    let writers = Writers::start(&cfg, "heavy-writes-test").unwrap();
    let heavy = |n: usize| SetHealthFactors {
        cluster: "localnet",
        owners: (0..n).map(|i| format!("owner{i}")).collect(),
        health_factors: vec!["1000000000000000000".to_string(); n],
    };
    // Sent at once: the first starts a batch, the others queue behind it.
    let done = join_all((0..3).map(|_| write(&writers, heavy(10_000)))).await;
    assert!(done.iter().all(Result::is_ok), "{done:?}");
    let index = |stats: Vec<lendex::actors::db_writer::LaneStats>| {
        stats
            .into_iter()
            .find(|s| s.lane == lendex::store::writes::Lane::Index)
            .unwrap()
    };
    let stats = index(writers.stats().await);
    assert_eq!((stats.batches, stats.largest_batch), (3, 1));
    // Light ones queued behind one still share the next batch.
    let done = join_all((0..20).map(|_| write(&writers, heavy(10)))).await;
    assert!(done.iter().all(Result::is_ok));
    let stats = index(writers.stats().await);
    assert!(stats.largest_batch >= 2, "{stats:?}");
}

#[actix_rt::test]
async fn index_writes_committed_together_are_each_a_change_of_their_own() {
    use lendex::actors::db_writer::{Writers, write};
    use lendex::domain::accounts::UserPosition;
    use lendex::domain::pubkey::Pubkey;
    use lendex::domain::wad::WAD;
    use lendex::store::chain_writes::SyncPosition;
    let app = spawn_app().await;
    let db = app.db.connect().await;
    let pool = insert_pool(&db, ORACLE_DOLLAR).await;
    let mut cfg = lendex::config::Config::defaults().database;
    cfg.url = app.db.url.clone();
    let writers = Writers::start(&cfg, "own-ticks-test").unwrap();
    let sync = |n: u64| {
        let owner = Pubkey::new_unique();
        SyncPosition {
            cluster: "localnet",
            pool_address: pool.clone(),
            pool: None,
            position_address: Pubkey::new_unique().to_string(),
            owner,
            position: Some(UserPosition {
                owner,
                pool: pool.parse().unwrap(),
                deposit_shares: 1_000 + n,
                borrow_principal: n,
                deposit_idx_snap: WAD,
                borrow_idx_snap: WAD,
                original_deposit: 1_000 + n,
                bump: 255,
            }),
            slot: 10,
            write_version: None,
        }
    };
    // Sent at once: the first starts a batch, the others share the next.
    let writes: Vec<SyncPosition> = (0..20).map(sync).collect();
    let positions: Vec<String> = writes.iter().map(|w| w.position_address.clone()).collect();
    let done = join_all(writes.into_iter().map(|w| write(&writers, w))).await;
    assert!(done.iter().all(Result::is_ok), "{done:?}");
    let stats = writers
        .stats()
        .await
        .into_iter()
        .find(|s| s.lane == lendex::store::writes::Lane::Index)
        .unwrap();
    assert!(
        stats.largest_batch >= 2,
        "no two writes shared a transaction: {stats:?}"
    );
    // Each write is its own tick of the change log: every replica applies,
    // publishes and judges for history each one on its own.
    let ticks: i64 = db
        .query_one(
            "SELECT count(DISTINCT tick) FROM feed_changes
             WHERE kind = 'o' AND image->>'position_address' = ANY($1)",
            &[&positions],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(ticks, 20);
}
