//! GET /metrics (docs/design.md §9): the Prometheus text format, every series named
//! `lendex_`, counters that follow what happened, and state read at scrape time.
//! The recorder is process-wide, so tests compare before and after.

use std::collections::HashMap;

use crate::chain_support::*;
use crate::common::*;

/// The exposition parsed: `name{labels}` -> value. Panics on a line that is not
/// the text format, so a malformed exposition fails the test.
async fn scrape(app: &TestApp) -> HashMap<String, f64> {
    let res = app.http.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let content_type = res.headers()["content-type"].to_str().unwrap().to_string();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    let text = res.text().await.unwrap();
    let mut series = HashMap::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        if let Some(comment) = line.strip_prefix("# ") {
            assert!(
                [
                    "HELP lendex_",
                    "TYPE lendex_",
                    "HELP process_",
                    "TYPE process_"
                ]
                .iter()
                .any(|p| comment.starts_with(p)),
                "{line}"
            );
            continue;
        }
        let (key, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{line}"));
        let name_end = key.find('{').unwrap_or(key.len());
        let name = &key[..name_end];
        // Ours, and the standard process series every client library exports.
        assert!(
            name.starts_with("lendex_") || name.starts_with("process_"),
            "{line}"
        );
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{line}"
        );
        if name_end < key.len() {
            assert!(key.ends_with('}'), "{line}");
        }
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "NaN" => f64::NAN,
            v => v.parse().unwrap_or_else(|_| panic!("{line}")),
        };
        series.insert(key.to_string(), value);
    }
    series
}

/// Series only a gRPC source records (slot statuses; the slot tree at
/// processed); processed_source reads each of them back.
const FROM_GRPC: &[&str] = &[
    "lendex_chain_slot",
    "lendex_chain_slot_confirmation_seconds_bucket",
    "lendex_chain_slot_problems_total",
];

/// Recorded only where a pool names a Pyth feed (the crank lag once a crank
/// lands): oracle_feeds checks them.
pub(crate) const FROM_FEEDS: &[&str] = &[
    "lendex_oracle_feed_deviation_bps",
    "lendex_oracle_crank_lag_seconds_bucket",
];

fn value(series: &HashMap<String, f64>, key: &str) -> f64 {
    series.get(key).copied().unwrap_or(0.0)
}

#[actix_rt::test]
async fn requests_engine_and_writer_are_scraped() {
    let app = spawn_app().await;
    let ok =
        r#"lendex_http_requests_total{route="/api/positions/unhealthy",method="GET",status="200"}"#;
    let missing = r#"lendex_http_requests_total{route="unmatched",method="GET",status="404"}"#;
    let before = scrape(&app).await;
    for _ in 0..3 {
        assert_eq!(app.get("/api/positions/unhealthy").await.0, 200);
    }
    assert_eq!(app.get("/api/no-such-route").await.0, 404);
    // A method a client invents is counted, under one label, not its own.
    let brew = reqwest::Method::from_bytes(b"BREW").unwrap();
    let res = app
        .http
        .request(brew, app.url("/api/pools"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 405);
    let invented = r#"lendex_http_requests_total{route="/api/pools",method="other",status="405"}"#;
    let wallet = Wallet::new();
    app.add_admin(&wallet, "pool_admin").await;
    let after = scrape(&app).await;

    assert!(value(&after, ok) - value(&before, ok) >= 3.0, "{after:?}");
    assert!(value(&after, missing) - value(&before, missing) >= 1.0);
    assert!(value(&after, invented) - value(&before, invented) >= 1.0);
    assert!(after.keys().all(|k| !k.contains("BREW")));
    // The path of a route with a wallet in it is never a label.
    assert!(after.keys().all(|k| !k.contains(&wallet.pubkey())));
    let bucket = r#"lendex_http_request_duration_seconds_count{route="/api/positions/unhealthy"}"#;
    assert!(value(&after, bucket) >= 3.0, "{after:?}");
    for gauge in [
        "lendex_engine_owners",
        "lendex_engine_unhealthy_owners",
        "lendex_engine_feed_version",
        "lendex_sse_subscribers",
        "lendex_sync_leader",
        "lendex_sync_stream_connected",
        r#"lendex_writer_queue_depth{lane="admin"}"#,
    ] {
        assert!(after.contains_key(gauge), "{gauge} missing");
    }
    // The admin write went through the admin lane: a batch was recorded.
    let batches = r#"lendex_writer_commit_duration_seconds_count{lane="admin"}"#;
    assert!(value(&after, batches) > value(&before, batches));
}

/// This machine's address on its default route (no packet is sent).
fn own_address() -> Option<std::net::IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[actix_rt::test]
async fn other_clients_get_404_unless_public() {
    let ip = own_address().expect("the machine has a non-loopback address");
    for public in [false, true] {
        let app = spawn_app_with(|c| {
            c.server.bind = "0.0.0.0:0".into();
            c.metrics.public = public;
        })
        .await;
        let port = app.base.rsplit(':').next().unwrap().to_string();
        let remote = format!("http://{ip}:{port}");
        let res = app
            .http
            .get(format!("{remote}/metrics"))
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        if public {
            assert_eq!(status, 200);
        } else {
            assert_eq!(
                (status, res.text().await.unwrap()),
                (404, r#"{"error":"not found"}"#.into())
            );
        }
        // The API itself answers them either way; loopback always gets metrics.
        let res = app
            .http
            .get(format!("{remote}/api/health"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        scrape(&app).await;
        let res = app.http.post(app.url("/metrics")).send().await.unwrap();
        assert_eq!(res.status(), 405);
    }
}

#[actix_rt::test]
async fn chain_reads_and_the_stream_are_scraped() {
    let t = ChainApp::start_with(|c| c.sync.interval_seconds = 60).await;
    let ok = r#"lendex_rpc_requests_total{method="getMultipleAccounts",outcome="ok"}"#;
    let before = scrape(&t.app).await;
    let (pool, _) = t.create_and_register(6, Some(100_000_000), Some(-8)).await;
    // A position arriving by websocket counts a notification.
    let owner = lendex::domain::pubkey::Pubkey::new_unique();
    t.put_position(&pool, &owner, 1_000, 0).await;
    let path = format!("/api/positions/{owner}");
    assert!(
        eventually(std::time::Duration::from_secs(10), async || {
            t.app.get(&path).await.1["positions"]
                .as_array()
                .is_some_and(|p| !p.is_empty())
        })
        .await
    );
    let after = scrape(&t.app).await;
    assert!(value(&after, ok) > value(&before, ok), "{after:?}");
    assert!(value(&after, "lendex_sync_notifications_total") >= 1.0);
    assert_eq!(value(&after, "lendex_sync_leader"), 1.0);
    assert_eq!(value(&after, "lendex_sync_stream_connected"), 1.0);
    assert!(value(&after, "lendex_rpc_gate_wait_seconds_count") > 0.0);
    assert!(value(&after, r#"lendex_sync_reconciles_total{outcome="ok"}"#) >= 1.0);
    // Health tells the same lag the gauge exports (the console's chain card
    // reads it there), not the tip's distance from the last refresh.
    let (_, health) = t.app.get("/api/health").await;
    let lag = health["checks"]["sync"]["lagSlots"].as_u64();
    assert_eq!(
        lag.map(|l| l as f64),
        Some(value(&scrape(&t.app).await, "lendex_sync_lag_slots")),
        "{health}"
    );
}

/// The `lendex_` and `process_` series a text names (a dashboard's queries, a
/// rule file): every word that starts so. Alert names are CamelCase, so only
/// series match.
fn series_named(text: &str) -> std::collections::BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("lendex_") || w.starts_with("process_"))
        .map(str::to_string)
        .collect()
}

/// Every series the shipped Grafana dashboard (ops/grafana/lendex.json) queries
/// and every series the alert rules (ops/prometheus/alerts.yml) read exists in
/// /metrics once the service has done its ordinary work: served requests,
/// written, read the chain, streamed, heard a NOTIFY.
#[actix_rt::test]
async fn the_dashboard_and_alerts_name_only_series_that_exist() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("ops/grafana/lendex.json")).unwrap(),
    )
    .unwrap();
    let mut queried = std::collections::BTreeSet::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            queried.extend(series_named(target["expr"].as_str().unwrap()));
        }
    }
    let rules = std::fs::read_to_string(root.join("ops/prometheus/alerts.yml")).unwrap();
    // Comments name no series; the rules' expressions and texts do.
    let rules: String = rules
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    let alerted = series_named(&rules);
    assert!(alerted.len() > 25, "{alerted:?}");
    queried.extend(alerted);
    assert!(queried.len() > 25, "{queried:?}");
    // Recorded by a gRPC source only; the leader here follows a websocket.
    for name in FROM_GRPC.iter().chain(FROM_FEEDS) {
        assert!(queried.remove(*name), "{name} is no longer queried");
    }

    // The ordinary work: a leader with its websocket, a stream subscriber, a
    // price moved on chain (chain notification -> frame) and one written by
    // someone else (NOTIFY -> frame), writes, reads.
    let mut m = crate::fixtures::market::market(|c| c.sync.interval_seconds = 2).await;
    let app = &m.t.app;
    let leading = eventually(std::time::Duration::from_secs(15), async || {
        let sync = app.get("/api/health").await.1["checks"]["sync"].clone();
        sync["role"] == "leader" && sync["stream"]["connected"] == true
    })
    .await;
    assert!(leading, "the replica leads with its websocket up");
    let mut feed = app
        .http
        .get(app.url("/api/positions/unhealthy/stream"))
        .send()
        .await
        .unwrap();
    let owner = m.account(500_000_000, 40_000_000_000).await;
    assert!(feed.chunk().await.unwrap().is_some());
    m.sol_data.oracle_price = Some(25 * crate::fixtures::market::USD);
    m.t.chain
        .set(
            &m.sol,
            &m.t.program,
            &lendex::domain::accounts::encode_pool(&m.sol_data),
        )
        .await;
    let db = m.t.app.db.connect().await;
    db.execute(
        "UPDATE pools SET oracle_price = oracle_price + 1 WHERE pool_address = $1",
        &[&m.usdc.to_string()],
    )
    .await
    .unwrap();
    let app = &m.t.app;
    let _ = app.get(&format!("/api/positions/{owner}")).await;
    let text = async || app.metrics_text().await;
    let exists = |text: &str, name: &str| {
        text.lines().any(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
        })
    };
    let all_there = eventually(std::time::Duration::from_secs(20), async || {
        let text = text().await;
        queried.iter().all(|name| exists(&text, name))
    })
    .await;
    let text = text().await;
    let missing: Vec<&String> = queried.iter().filter(|n| !exists(&text, n)).collect();
    assert!(
        all_there,
        "queried by the dashboard or the alerts, not in /metrics: {missing:?}"
    );
    drop(feed);
}
