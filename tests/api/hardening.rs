//! Defects an outside probe found, each reproduced: NUL bytes in text
//! fields, an SSE snapshot cut at the subscriber buffer, closed subscribers that
//! lingered, slow subscribers without bound, and a cache health that hid a lost
//! LISTEN connection.

use std::time::Duration;

use lendex::domain::pubkey::Pubkey;
use serde_json::{Value, json};

use crate::common::*;
use crate::fixtures::feeds::read_events;
use crate::fixtures::market::{USD, market};

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

fn unique_keys(n: usize) -> Vec<String> {
    (0..n).map(|_| Pubkey::new_unique().to_string()).collect()
}

/// 5,000 owners under water: a new subscriber gets a candidate_start for each
/// (the snapshot was cut at the 4,096-event subscriber buffer, silently).
#[actix_rt::test]
async fn the_stream_snapshot_is_complete_at_any_size() {
    let m = market(|_| {}).await;
    let (owners, positions) = (unique_keys(5_000), unique_keys(5_000));
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

/// Bytes the kernel holds unsent on each server-side socket of `port`
/// (/proc/net/tcp's tx_queue, IPv4 loopback).
fn server_send_queues(port: u16) -> Vec<usize> {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    let local = format!(":{port:04X}");
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            // Established sockets whose local end is the server's port.
            (cols.get(1)?.ends_with(&local) && cols.get(3)? == &"01").then_some(())?;
            let tx = cols.get(4)?.split(':').next()?;
            usize::from_str_radix(tx, 16).ok()
        })
        .collect()
}

/// 3,000 owners under water and subscribers that never read (the probe had 200
/// of them push kernel TCP memory to 553 MB and stall the polling path): each
/// one's socket holds a bounded send queue, the polling path and health answer
/// meanwhile, a subscriber that falls further behind than
/// cache.subscriber_max_lag_bytes is dropped and, when it reads on, gets one
/// `resync` event and the end of its stream, and a subscriber that keeps up is
/// never dropped, however large each price move's batch.
#[actix_rt::test]
async fn slow_subscribers_are_bounded_and_told_to_resync() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::AsyncWriteExt;

    const OWNERS: usize = 3_000;
    let mut m = market(|c| c.cache.subscriber_max_lag_bytes = 256 * 1024).await;
    let (owners, deposits, borrows) = (
        unique_keys(OWNERS),
        unique_keys(OWNERS),
        unique_keys(OWNERS),
    );
    // 500 USDC against 40 SOL at $20: health factor 0.5, under water at any price below.
    let db = m.t.app.db.connect().await;
    db.execute(
        "INSERT INTO positions (cluster, position_address, pool_address, owner, deposit_shares,
             borrow_principal, deposit_idx_snap, borrow_idx_snap)
         SELECT 'localnet', d, $1, o, 500000000, 0, 1000000000000000000, 1000000000000000000
         FROM unnest($3::text[], $4::text[]) AS t(d, o)
         UNION ALL
         SELECT 'localnet', b, $2, o, 0, 40000000000, 1000000000000000000, 1000000000000000000
         FROM unnest($5::text[], $4::text[]) AS t(b, o)",
        &[
            &m.usdc.to_string(),
            &m.sol.to_string(),
            &deposits,
            &owners,
            &borrows,
        ],
    )
    .await
    .unwrap();
    let app = &m.t.app;
    assert!(
        eventually(Duration::from_secs(30), async || {
            app.get("/api/health").await.1["checks"]["cache"]["unhealthyOwners"] == OWNERS
        })
        .await,
        "the cache took in every owner"
    );

    // 20 subscribers that send their request and never read a byte.
    let addr = app.base.trim_start_matches("http://").to_string();
    let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
    let mut silent = Vec::new();
    for _ in 0..20 {
        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
        s.write_all(b"GET /api/positions/unhealthy/stream HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        silent.push(s);
    }
    // One that stops reading after the first chunk, and resumes at the end.
    let mut paused = app
        .http
        .get(app.url("/api/positions/unhealthy/stream"))
        .send()
        .await
        .unwrap();
    paused.chunk().await.unwrap();
    // One that reads everything as it comes, counting events.
    let updates = Arc::new(AtomicUsize::new(0));
    let resyncs = Arc::new(AtomicUsize::new(0));
    let mut reader = app
        .http
        .get(app.url("/api/positions/unhealthy/stream"))
        .send()
        .await
        .unwrap();
    let (u, r) = (updates.clone(), resyncs.clone());
    let reading = tokio::spawn(async move {
        let mut tail = String::new();
        while let Ok(Some(chunk)) = reader.chunk().await {
            tail.push_str(&String::from_utf8_lossy(&chunk));
            let cut = tail.rfind("\n\n").map_or(0, |i| i + 2);
            let frames: String = tail.drain(..cut).collect();
            u.fetch_add(
                frames.matches("event: candidate_update\n").count(),
                Ordering::SeqCst,
            );
            r.fetch_add(frames.matches("event: resync\n").count(), Ordering::SeqCst);
        }
    });
    let cache = async || app.get("/api/health").await.1["checks"]["cache"].clone();
    assert!(
        eventually(
            Duration::from_secs(10),
            async || cache().await["subscribers"] == 22
        )
        .await
    );

    // Price moves: every owner changes, about 2.5 MB of events per move.
    for (i, price) in [21, 22, 23, 24].into_iter().enumerate() {
        m.set_sol_price(price * USD).await;
        let app = &m.t.app;
        let started = std::time::Instant::now();
        let (status, body) = app.get("/api/positions/unhealthy?limit=1").await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(app.get("/api/health").await.0, 200);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the polling path stalled {:?}",
            started.elapsed()
        );
        let want = OWNERS * (i + 1);
        assert!(
            eventually(Duration::from_secs(30), async || updates
                .load(Ordering::SeqCst)
                >= want)
            .await,
            "the reader got {} of {want} updates",
            updates.load(Ordering::SeqCst)
        );
    }
    let app = &m.t.app;
    let health = app.get("/api/health").await.1["checks"]["cache"].clone();
    assert_eq!(
        health["subscribers"], 1,
        "only the reader is left: {health}"
    );
    assert!(
        health["droppedSubscribers"].as_u64().unwrap() >= 21,
        "{health}"
    );
    assert_eq!(resyncs.load(Ordering::SeqCst), 0, "the reader kept up");

    // What the kernel holds for each silent subscriber is its fixed send buffer,
    // not megabytes of autotuned queue.
    let queues = server_send_queues(port);
    assert!(
        queues.len() >= 20 && queues.iter().all(|&q| q <= 512 * 1024),
        "send queues: {queues:?}"
    );

    // The paused subscriber reads on: its backlog was discarded; it is told to
    // resync, and its stream ends.
    let mut rest = String::new();
    while let Ok(Ok(Some(chunk))) =
        tokio::time::timeout(Duration::from_secs(10), paused.chunk()).await
    {
        rest.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(
        rest.trim_end()
            .ends_with(r#""resync":"/api/positions/unhealthy"}"#),
        "{}",
        &rest[rest.len().saturating_sub(300)..]
    );
    assert!(rest.contains("event: resync\n"));
    drop(silent);
    reading.abort();
}
