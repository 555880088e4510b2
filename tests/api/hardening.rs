//! Defects an outside probe found (issue 11), each reproduced: NUL bytes in text
//! fields, an SSE snapshot cut at the subscriber buffer, closed subscribers that
//! lingered, and a cache health that hid a lost LISTEN connection.

use std::time::Duration;

use lendex::domain::pubkey::Pubkey;
use serde_json::{Value, json};

use crate::common::*;
use crate::health_feed::{market, read_events};

/// PostgreSQL text cannot hold 0x00: such input is 400 `invalid`, never a 500,
/// and a signed call is refused before its nonce is spent.
#[actix_rt::test]
async fn nul_bytes_are_invalid_and_spend_no_nonce() {
    let app = spawn_app().await;
    for query in ["actor=%00", "action=a%00b", "limit=1&actor=x%00"] {
        assert_eq!(
            app.get(&format!("/api/admin/audit?{query}")).await,
            (400, error("invalid")),
            "{query}"
        );
    }
    let wallet = Wallet::new().pubkey();
    for (field, value) in [
        ("error_msg", "a\u{0}b"),
        ("signature", "sig\u{0}"),
        ("wallet", "\u{0}"),
        ("amount", "1\u{0}"),
    ] {
        let mut tx = json!({ "signature": "s1", "wallet": wallet, "action": "deposit" });
        tx[field] = json!(value);
        assert_eq!(
            app.post("/api/transactions", &tx).await,
            (400, error("invalid")),
            "{field}"
        );
    }
    // A signed add_admin with a NUL in its label: refused, and the nonce survives.
    let new_admin = Wallet::new();
    let action = format!("add_admin:{}:pool_admin", new_admin.pubkey());
    let (nonce, signature) = app.signed(&app.root, &action).await;
    let mut body = json!({ "actor": app.root.pubkey(), "nonce": nonce, "signature": signature,
                           "pubkey": new_admin.pubkey(), "role": "pool_admin", "label": "a\u{0}b" });
    assert_eq!(
        app.post("/api/admin/allowlist", &body).await,
        (400, error("invalid"))
    );
    body["label"] = json!("ops");
    assert_eq!(
        app.post("/api/admin/allowlist", &body).await,
        (200, json!({ "ok": true }))
    );
}

/// 5,000 owners under water: a new subscriber gets a candidate_start for each
/// (the snapshot was cut at the 4,096-event subscriber buffer, silently).
#[actix_rt::test]
async fn the_stream_snapshot_is_complete_at_any_size() {
    let m = market(|_| {}).await;
    let owners: Vec<String> = (0..5_000)
        .map(|_| Pubkey::new_unique().to_string())
        .collect();
    let positions: Vec<String> = (0..5_000)
        .map(|_| Pubkey::new_unique().to_string())
        .collect();
    // Debt and no collateral: health factor 0. Written by SQL, as an indexer would.
    let db = m.t.app.db.connect().await;
    db.execute(
        "INSERT INTO positions (cluster, position_address, pool_address, owner, deposit_shares,
             borrow_principal, deposit_idx_snap, borrow_idx_snap)
         SELECT 'localnet', p, $1, o, 0, 1000000000, 1000000000000000000, 1000000000000000000
         FROM unnest($2::text[], $3::text[]) AS t(p, o)",
        &[&m.sol.to_string(), &positions, &owners],
    )
    .await
    .unwrap();
    let app = &m.t.app;
    assert!(
        eventually(Duration::from_secs(20), async || {
            app.get("/api/health").await.1["checks"]["cache"]["unhealthyOwners"] == 5_000
        })
        .await,
        "the cache took in every owner"
    );
    let mut res = app
        .http
        .get(app.url("/api/positions/unhealthy/stream"))
        .send()
        .await
        .unwrap();
    let mut buffer = String::new();
    let events = read_events(&mut res, &mut buffer, 5_000, Duration::from_secs(20)).await;
    let mut seen: Vec<&str> = events
        .iter()
        .filter(|(name, _)| name == "candidate_start")
        .map(|(_, data)| data["owner"].as_str().unwrap())
        .collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 5_000, "every owner under water, once");
}

/// Subscribers that hang up are released at once, not at the next market event.
#[actix_rt::test]
async fn closed_subscribers_are_released() {
    let m = market(|_| {}).await;
    let app = &m.t.app;
    for _ in 0..50 {
        let res = app
            .http
            .get(app.url("/api/positions/unhealthy/stream"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 200);
        drop(res);
    }
    let subscribers = async || -> Value {
        app.get("/api/health").await.1["checks"]["cache"]["subscribers"].clone()
    };
    assert!(
        eventually(Duration::from_secs(5), async || subscribers().await == 0).await,
        "still counted: {}",
        subscribers().await
    );
}

/// While the cache's LISTEN connection is down it may miss changes: health says
/// so (degraded), and recovers once the connection and the reload are back.
#[actix_rt::test]
async fn health_reports_a_lost_listen_connection() {
    let app = spawn_app().await;
    let db = app.db.connect().await;
    let cache_ok = async || app.get("/api/health").await.1["checks"]["cache"]["ok"] == true;
    assert!(eventually(Duration::from_secs(5), cache_ok).await);
    let killed = db
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND query LIKE 'LISTEN%'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(killed.len(), 1, "one LISTEN connection");
    let mut saw_down = false;
    for _ in 0..60 {
        let health = app.get("/api/health").await.1;
        if health["checks"]["cache"]["listening"] == false {
            assert_eq!(health["checks"]["cache"]["ok"], false);
            assert_eq!(health["status"], "degraded");
            saw_down = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(saw_down, "health never showed the lost connection");
    assert!(
        eventually(Duration::from_secs(10), async || {
            app.get("/api/health").await.1["checks"]["cache"]["listening"] == true
        })
        .await,
        "the connection comes back"
    );
}
