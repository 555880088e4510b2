//! A replica on its way out from behind a load balancer (docs/design.md §13), and
//! the log lines that scale with the polls (docs/design.md §1).

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use lendex::domain::pubkey::Pubkey;
use serde_json::{Value, json};

use crate::common::*;
use crate::process::{Served, serve, serve_command, sigterm, stop, wait_until_up};

/// SIGTERM: for `server.drain_ms` health answers 503 "draining" and a new
/// stream is refused (503 `draining`, Retry-After) while reads are still
/// answered; then the open stream ends, the held long poll is answered 304,
/// and the process exits 0 well before the shutdown timeout.
#[actix_rt::test]
async fn sigterm_fails_health_first_then_closes_streams_and_held_polls() {
    let db = TestDb::create().await;
    let port = free_port();
    let mut child = serve(
        &db,
        port,
        &[
            ("LENDEX_SERVER__DRAIN_MS", "1500"),
            ("LENDEX_SERVER__SHUTDOWN_TIMEOUT_SECONDS", "30"),
        ],
    );
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    wait_until_up(&http, &base).await;
    let health = http.get(format!("{base}/api/health")).send().await.unwrap();
    assert_eq!(health.status().as_u16(), 200);

    let mut stream = http
        .get(format!("{base}/api/positions/unhealthy/stream"))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    let stream_ended = tokio::spawn(async move {
        while let Ok(Some(_)) = stream.chunk().await {}
        Instant::now()
    });
    let current = http
        .get(format!("{base}/api/positions/unhealthy"))
        .send()
        .await
        .unwrap();
    let tag = current.headers()["etag"].to_str().unwrap().to_string();
    let held = {
        let (http, base) = (http.clone(), base.clone());
        tokio::spawn(async move {
            let res = http
                .get(format!("{base}/api/positions/unhealthy?wait_ms=30000"))
                .header("If-None-Match", tag)
                .send()
                .await
                .unwrap();
            (res.status().as_u16(), Instant::now())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;

    let signalled = Instant::now();
    sigterm(&child);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let health = http.get(format!("{base}/api/health")).send().await.unwrap();
    assert_eq!(health.status().as_u16(), 503, "health fails while draining");
    let body: Value = health.json().await.unwrap();
    assert_eq!(body["status"], "draining", "{body}");
    assert!(
        body["checks"]["database"]["ok"].as_bool().unwrap(),
        "{body}"
    );

    let refused = http
        .get(format!("{base}/api/positions/unhealthy/stream"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status().as_u16(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    assert_eq!(
        refused.json::<Value>().await.unwrap(),
        json!({"error": "draining"})
    );
    let read = http.get(format!("{base}/api/pools")).send().await.unwrap();
    assert_eq!(read.status().as_u16(), 200, "reads are still answered");
    assert!(
        signalled.elapsed() < Duration::from_millis(1200),
        "the checks above ran inside the drain window"
    );

    let ended = tokio::time::timeout(Duration::from_secs(10), stream_ended)
        .await
        .expect("the stream ended")
        .unwrap();
    let (status, answered) = tokio::time::timeout(Duration::from_secs(10), held)
        .await
        .expect("the held poll was answered")
        .unwrap();
    assert_eq!(status, 304);
    for (what, at) in [("stream ended", ended), ("held poll answered", answered)] {
        let after = at - signalled;
        assert!(
            after >= Duration::from_millis(1400),
            "{what} {after:?} after SIGTERM: before the balancer could notice"
        );
    }
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "exit 0 after SIGTERM, got {status:?}");
    assert!(
        signalled.elapsed() < Duration::from_secs(10),
        "the stop waited on the held poll: {:?}",
        signalled.elapsed()
    );
}

/// At the default level, the polled routes' successful reads leave no log
/// line (they are DEBUG) but are counted in /metrics; a write, an error and
/// a slow read are logged at INFO.
#[actix_rt::test]
async fn polled_reads_are_counted_not_logged_and_the_rest_is_logged() {
    for slow_ms in ["100", "0"] {
        let db = TestDb::create().await;
        let port = free_port();
        let env = [
            ("LENDEX_SERVER__SLOW_REQUEST_MS", slow_ms),
            ("RUST_LOG", "info"),
        ];
        let mut child = Served(
            serve_command(&db, port, &env)
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let mut stderr = child.stderr.take().unwrap();
        let logs = std::thread::spawn(move || {
            let mut out = String::new();
            let _ = stderr.read_to_string(&mut out);
            out
        });
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        wait_until_up(&http, &base).await;
        let polled = [
            "/api/liquidations?limit=5",
            "/api/pools",
            "/api/history/events",
        ];
        for _ in 0..20 {
            for path in polled {
                let res = http.get(format!("{base}{path}")).send().await.unwrap();
                assert_eq!(res.status().as_u16(), 200, "{path}");
            }
        }
        let bad = http
            .get(format!("{base}/api/liquidations?wait_ms=-1"))
            .send()
            .await
            .unwrap();
        assert_eq!(bad.status().as_u16(), 400);
        let write = http
            .post(format!("{base}/api/transactions"))
            .json(
                &json!({ "signature": "logged-write", "wallet": Pubkey::new_unique().to_string(),
                           "action": "deposit", "amount": "5" }),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(write.status().as_u16(), 200);
        let metrics = get_text(&http, &format!("{base}/metrics")).await;
        let counted = metrics
            .lines()
            .filter(|l| {
                l.starts_with("lendex_http_requests_total{")
                    && l.contains("route=\"/api/liquidations\"")
                    && l.contains("status=\"200\"")
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>();
        assert_eq!(counted, 20.0, "{metrics}");

        let (status, _) = stop(child).await;
        assert!(status.success());
        let logs = logs.join().unwrap();
        let lines = |path: &str| {
            logs.lines()
                .filter(|l| l.contains("request") && l.contains(&format!("path={path}")))
                .count()
        };
        assert_eq!(lines("/api/transactions"), 1, "the write is INFO: {logs}");
        assert!(logs.contains("status=400"), "the error is INFO: {logs}");
        let quiet = slow_ms != "0";
        for path in ["/api/liquidations", "/api/pools", "/api/history/events"] {
            let expected = if quiet { 0 } else { 20 };
            assert_eq!(
                lines(path),
                expected + usize::from(path == "/api/liquidations"),
                "{path} with slow_request_ms = {slow_ms}: {logs}"
            );
        }
    }
}
