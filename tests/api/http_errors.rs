//! Errors every route shares: unknown routes, methods, oversized bodies, rate
//! limits; and the health and OpenAPI documents.

use serde_json::json;

use crate::common::*;

#[actix_rt::test]
async fn unknown_route_and_method_are_json() {
    let app = spawn_app().await;
    assert_eq!(app.get("/api/nope").await, (404, error("not found")));
    assert_eq!(app.get("/").await, (404, error("not found")));
    // 405 says which methods the path answers.
    for (method, path, allow) in [
        (reqwest::Method::PUT, "/api/transactions", "GET, HEAD, POST"),
        (reqwest::Method::GET, "/api/auth/nonce", "POST"),
        (reqwest::Method::POST, "/api/health", "GET, HEAD"),
        (
            reqwest::Method::PATCH,
            "/api/admin/allowlist",
            "GET, HEAD, POST, DELETE",
        ),
        (
            reqwest::Method::HEAD,
            "/api/positions/unhealthy/stream",
            "GET",
        ),
    ] {
        let res = app
            .http
            .request(method.clone(), app.url(path))
            .send()
            .await
            .unwrap();
        assert_eq!(
            res.headers().get("allow").and_then(|v| v.to_str().ok()),
            Some(allow),
            "{method} {path}"
        );
        if method != reqwest::Method::HEAD {
            assert_eq!(
                decode(res).await,
                (405, error("method not allowed")),
                "{method} {path}"
            );
        } else {
            assert_eq!(res.status().as_u16(), 405);
        }
    }
    // HEAD on a GET route: the GET's status and headers, no body.
    for path in [
        "/api/health",
        "/api/pools",
        "/api/transactions",
        "/api/openapi.json",
    ] {
        let res = app.http.head(app.url(path)).send().await.unwrap();
        assert_eq!(res.status().as_u16(), 200, "HEAD {path}");
        assert_eq!(
            res.headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok()),
            Some("application/json"),
            "HEAD {path}"
        );
        assert!(
            res.bytes().await.unwrap().is_empty(),
            "HEAD {path} has no body"
        );
    }
}

#[actix_rt::test]
async fn body_over_64_kib_is_413() {
    let app = spawn_app().await;
    let big = format!("{{\"signature\":\"{}\"}}", "a".repeat(70 * 1024));
    assert_eq!(
        app.post_raw("/api/transactions", big).await,
        (413, error("payload too large"))
    );
    // Exactly at the limit is read (and then judged on its content).
    let padding = 64 * 1024 - r#"{"p":""}"#.len();
    let at_limit = format!("{{\"p\":\"{}\"}}", "a".repeat(padding));
    assert_eq!(at_limit.len(), 64 * 1024);
    assert_eq!(
        app.post_raw("/api/transactions", at_limit).await,
        (400, error("signature, wallet, action required"))
    );
}

#[actix_rt::test]
async fn body_is_json_whatever_the_content_type() {
    let app = spawn_app().await;
    let w = Wallet::new().pubkey();
    let body = json!({ "signature": "ct", "wallet": w, "action": "deposit" }).to_string();
    let res = app
        .http
        .post(app.url("/api/transactions"))
        .header("content-type", "text/plain")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(decode(res).await.0, 200);
}

#[actix_rt::test]
async fn public_writes_are_rate_limited_per_ip() {
    let app = spawn_app_with(|c| {
        c.limits.public_write_per_second = 1;
        c.limits.public_write_burst = 3;
    })
    .await;
    let w = Wallet::new().pubkey();
    let mut statuses = Vec::new();
    for i in 0..5 {
        let res = app
            .http
            .post(app.url("/api/transactions"))
            .json(&json!({ "signature": format!("r{i}"), "wallet": w, "action": "deposit" }))
            .send()
            .await
            .unwrap();
        let retry_after = res
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_string());
        let (status, body) = decode(res).await;
        if status == 429 {
            assert_eq!(body, error("rate limited"));
            let secs: u64 = retry_after.expect("Retry-After header").parse().unwrap();
            assert!(secs >= 1);
        }
        statuses.push(status);
    }
    assert_eq!(statuses, vec![200, 200, 200, 429, 429]);
    // Reads are not limited.
    assert_eq!(app.get("/api/transactions").await.0, 200);
    // The nonce endpoint shares the per-IP bucket.
    let (status, _) = app
        .post("/api/auth/nonce", &json!({ "pubkey": w, "action": "a" }))
        .await;
    assert_eq!(status, 429);
}

#[actix_rt::test]
async fn health_is_degraded_with_no_chain_and_counts_the_cluster() {
    let app = spawn_app().await;
    let started = std::time::Instant::now();
    let (status, body) = app.get("/api/health").await;
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    assert_eq!(status, 200);
    assert_eq!(body["status"], "degraded");
    assert_eq!(body["checks"]["database"]["ok"], true);
    assert!(body["checks"]["database"]["latencyMs"].is_u64());
    assert_eq!(body["checks"]["rpc"], json!({ "ok": false, "slot": 0 }));
    assert_eq!(body["checks"]["counts"], json!({ "pools": 0, "tx_log": 0 }));
    assert_eq!(body["checks"]["cache"]["ok"], true);
    assert_eq!(body["checks"]["sync"]["enabled"], false);
    assert!(chrono::DateTime::parse_from_rfc3339(body["timestamp"].as_str().unwrap()).is_ok());
    app.post(
        "/api/transactions",
        &json!({ "signature": "h", "wallet": Wallet::new().pubkey(), "action": "deposit" }),
    )
    .await;
    let (_, body) = app.get("/api/health").await;
    assert_eq!(body["checks"]["counts"]["tx_log"], 1);
}

#[actix_rt::test]
async fn health_answers_within_3s_when_the_rpc_hangs() {
    // A listener that accepts and never answers.
    let hang = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = hang.local_addr().unwrap();
    let app = spawn_app_with(|c| {
        c.rpc.url = format!("http://{addr}");
        c.rpc.timeout_ms = 10_000;
    })
    .await;
    let started = std::time::Instant::now();
    let (status, body) = app.get("/api/health").await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        (status, &body["checks"]["rpc"]),
        (200, &json!({ "ok": false, "slot": 0 }))
    );
    drop(hang);
}

#[actix_rt::test]
async fn health_is_degraded_not_down_without_database() {
    // The server starts and answers even when PostgreSQL cannot be reached.
    let app = spawn_app_with(|c| {
        c.database.url = "postgres://postgres@127.0.0.1:1/none".into();
        c.database.acquire_timeout_ms = 300;
    })
    .await;
    let (status, body) = app.get("/api/health").await;
    assert_eq!(status, 200);
    assert_eq!(body["status"], "degraded");
    assert_eq!(body["checks"]["database"]["ok"], false);
    assert_eq!(
        app.get("/api/pools").await,
        (503, error("database unavailable"))
    );
}

#[actix_rt::test]
async fn openapi_document_covers_every_route() {
    let app = spawn_app().await;
    let (status, doc) = app.get("/api/openapi.json").await;
    assert_eq!(status, 200);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    let paths = doc["paths"].as_object().unwrap();
    for (path, method) in [
        ("/api/auth/nonce", "post"),
        ("/api/admin/me", "get"),
        ("/api/admin/allowlist", "get"),
        ("/api/admin/allowlist", "post"),
        ("/api/admin/allowlist", "delete"),
        ("/api/admin/audit", "get"),
        ("/api/pools", "get"),
        ("/api/transactions", "get"),
        ("/api/transactions", "post"),
        ("/api/health", "get"),
        ("/api/pools/init", "post"),
        ("/api/pools/sync", "post"),
        ("/api/positions/sync", "post"),
        ("/api/positions/{user}", "get"),
        ("/api/positions/{user}/detail", "get"),
        ("/api/positions/unhealthy", "get"),
        ("/api/positions/unhealthy/stream", "get"),
    ] {
        assert!(
            paths.get(path).and_then(|p| p.get(method)).is_some(),
            "{method} {path} missing"
        );
    }
}

#[actix_rt::test]
async fn pools_list_is_empty_index_at_first() {
    let app = spawn_app().await;
    assert_eq!(app.get("/api/pools").await, (200, json!({ "pools": [] })));
}

/// Reads what the server sends until it closes, or `limit` passes.
async fn read_for(
    stream: &mut tokio::net::TcpStream,
    limit: std::time::Duration,
) -> (String, bool) {
    use tokio::io::AsyncReadExt;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&out).into(), true),
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
            Err(_) => return (String::from_utf8_lossy(&out).into(), false),
        }
    }
}

/// A request whose body (or head) never finishes gets 408 and the socket back
/// within `server.request_timeout_ms`; it used to hang for as long as the client.
#[actix_rt::test]
async fn a_request_that_never_finishes_gets_408_and_is_closed() {
    use tokio::io::AsyncWriteExt;
    let app = spawn_app_with(|c| c.server.request_timeout_ms = 500).await;
    let addr = app.base.trim_start_matches("http://").to_string();

    let mut body_never = tokio::net::TcpStream::connect(&addr).await.unwrap();
    body_never
        .write_all(b"POST /api/transactions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{}")
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let (text, closed) = read_for(&mut body_never, std::time::Duration::from_secs(5)).await;
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains(r#"{"error":"request timeout"}"#), "{text}");
    assert!(closed, "the connection is closed after the 408");
    assert!(started.elapsed() < std::time::Duration::from_secs(4));

    let mut head_never = tokio::net::TcpStream::connect(&addr).await.unwrap();
    head_never
        .write_all(b"POST /api/transactions HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let (text, closed) = read_for(&mut head_never, std::time::Duration::from_secs(5)).await;
    assert!(closed, "a head that never ends is cut off: {text:?}");
    assert!(
        text.is_empty()
            || (text.starts_with("HTTP/1.1 408")
                && text.ends_with(r#"{"error":"request timeout"}"#)),
        "{text}"
    );
    // And the server still answers. With this test's 500 ms request timeout,
    // a loaded machine can stall the client past it between connecting and
    // writing its request; the server's 408 then arrives before the request
    // (hyper: UnexpectedMessage). That is the timeout working, so ask again
    // rather than fail on a slow day.
    let http = test_client();
    let health = app.url("/api/health");
    assert!(
        eventually(std::time::Duration::from_secs(10), async || {
            let answer = http.get(&health).send().await;
            answer.is_ok_and(|r| r.status() == 200)
        })
        .await,
        "the server answers after the slow clients"
    );
}

/// What actix-http refuses before any handler runs (a request it cannot parse, a
/// head over its buffer) is answered in the contract's JSON shape too, and the
/// connection is closed; it used to be an empty body.
#[actix_rt::test]
async fn unparsable_requests_get_json_errors() {
    use tokio::io::AsyncWriteExt;
    let app = spawn_app().await;
    let addr = app.base.trim_start_matches("http://").to_string();
    let long_url = format!(
        "GET /api/pools?{} HTTP/1.1\r\nHost: x\r\n\r\n",
        "a".repeat(200_000)
    );
    let many_headers = format!(
        "GET /api/pools HTTP/1.1\r\nHost: x\r\n{}\r\n",
        (0..200)
            .map(|i| format!("X-H{i}: v\r\n"))
            .collect::<String>()
    );
    let cases: Vec<(Vec<u8>, &str, &str)> = vec![
        (b"GARBAGE\r\n\r\n".to_vec(), "400", r#"{"error":"invalid"}"#),
        (
            b"POST /api/transactions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n".to_vec(),
            "400",
            r#"{"error":"invalid"}"#,
        ),
        (
            b"POST /api/transactions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec(),
            "400",
            r#"{"error":"invalid"}"#,
        ),
        (long_url.into_bytes(), "431", r#"{"error":"headers too large"}"#),
        (many_headers.into_bytes(), "431", r#"{"error":"headers too large"}"#),
    ];
    for (request, status, body) in cases {
        let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let _ = stream.write_all(&request).await;
        let (text, closed) = read_for(&mut stream, std::time::Duration::from_secs(5)).await;
        let what = String::from_utf8_lossy(&request[..request.len().min(60)]).to_string();
        assert!(
            text.starts_with(&format!("HTTP/1.1 {status} ")),
            "{what}: {text}"
        );
        assert!(
            text.contains("content-type: application/json\r\n"),
            "{what}: {text}"
        );
        assert!(
            text.contains(&format!("content-length: {}\r\n", body.len())),
            "{what}: {text}"
        );
        assert!(text.ends_with(&format!("\r\n\r\n{body}")), "{what}: {text}");
        assert!(closed, "{what}: the connection is closed");
    }
    // A good request before a bad one on the same connection: both answered.
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    stream
        .write_all(b"GET /api/pools HTTP/1.1\r\nHost: x\r\n\r\nGARBAGE\r\n\r\n")
        .await
        .unwrap();
    let (text, _) = read_for(&mut stream, std::time::Duration::from_secs(5)).await;
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    assert!(text.ends_with(r#"{"error":"invalid"}"#), "{text}");
}
