//! Never stuck: a log reader that goes away takes nothing down, and a graceful
//! stop does not wait on feed subscribers that read nothing.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use lendex::domain::pubkey::Pubkey;
use serde_json::json;

use crate::common::*;
use crate::process::{BIN, Served, serve, serve_command, stop, wait_until_up};

/// `scripts/run 2>&1 | tee run.log`, then Ctrl-C: tee exits and stderr is a
/// broken pipe. Requests are still answered, a committed write is still
/// acknowledged, and SIGTERM still stops the service (exit 0). (A write to the
/// broken pipe used to panic the logger, in every request and in the stop.)
#[actix_rt::test]
async fn a_dead_log_reader_stops_neither_requests_nor_the_stop() {
    let db = TestDb::create().await;
    let port = free_port();
    let mut child = Served(
        serve_command(&db, port, &[("RUST_LOG", "info")])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // The reader takes the first lines, then goes away.
    let mut stderr = child.stderr.take().unwrap();
    let mut first = [0u8; 64];
    stderr.read_exact(&mut first).unwrap();
    drop(stderr);

    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    wait_until_up(&http, &base).await;
    for _ in 0..50 {
        let res = http.get(format!("{base}/api/pools")).send().await.unwrap();
        assert_eq!(res.status().as_u16(), 200);
    }
    let signature = "dead-log-reader-1";
    let res = http
        .post(format!("{base}/api/transactions"))
        .json(
            &json!({ "signature": signature, "wallet": Pubkey::new_unique().to_string(),
                       "action": "deposit", "amount": "5" }),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200, "the write was acknowledged");
    let stored = db
        .connect()
        .await
        .query_opt("SELECT 1 FROM tx_log WHERE signature = $1", &[&signature])
        .await
        .unwrap();
    assert!(stored.is_some(), "and committed");

    let (status, took) = stop(child).await;
    assert!(status.success(), "exit 0 after SIGTERM, got {status:?}");
    assert!(took < Duration::from_secs(10), "the stop took {took:?}");
}

/// One subscriber that reads nothing, with a 5,000-owner snapshot stuck in its
/// socket: SIGTERM ends its stream at once instead of waiting the whole
/// shutdown timeout (30 s) for it to drain, and acknowledged writes are kept.
#[actix_rt::test]
async fn a_subscriber_that_reads_nothing_does_not_hold_up_the_stop() {
    let db = TestDb::create().await;
    // 5,000 owners under water (debt, no collateral), written as an indexer
    // would, before the service starts and loads them.
    let client = db.connect().await;
    let migrated = Command::new(BIN)
        .arg("migrate")
        .env("DATABASE_URL", &db.url)
        .env_remove("SUPER_ADMIN_PUBKEY")
        .output()
        .unwrap();
    assert!(migrated.status.success());
    let pool = insert_pool(&client, ORACLE_DOLLAR).await;
    let keys =
        |n: usize| -> Vec<String> { (0..n).map(|_| Pubkey::new_unique().to_string()).collect() };
    let (owners, positions) = (keys(5_000), keys(5_000));
    client
        .execute(
            "INSERT INTO positions (cluster, position_address, pool_address, owner, deposit_shares,
                 borrow_principal, deposit_idx_snap, borrow_idx_snap)
             SELECT 'localnet', p, $1, o, 0, 1000000000, 1000000000000000000, 1000000000000000000
             FROM unnest($2::text[], $3::text[]) AS t(p, o)",
            &[&pool, &positions, &owners],
        )
        .await
        .unwrap();

    let port = free_port();
    let child = serve(
        &db,
        port,
        &[("LENDEX_SERVER__SHUTDOWN_TIMEOUT_SECONDS", "30")],
    );
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    wait_until_up(&http, &base).await;
    assert!(
        eventually(Duration::from_secs(20), async || {
            let health = get_json(&http, &format!("{base}/api/health")).await;
            health["checks"]["cache"]["unhealthyOwners"] == 5_000
        })
        .await,
        "the cache loaded every owner"
    );

    // A subscriber with a small receive buffer that never reads.
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket
        .connect(&std::net::SocketAddr::from(([127, 0, 0, 1], port)).into())
        .unwrap();
    let mut stuck: std::net::TcpStream = socket.into();
    write!(
        stuck,
        "GET /api/positions/unhealthy/stream HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    .unwrap();
    // Time for the server to fill both socket buffers and block.
    tokio::time::sleep(Duration::from_secs(1)).await;

    let res = http
        .post(format!("{base}/api/transactions"))
        .json(
            &json!({ "signature": "kept-at-stop", "wallet": Pubkey::new_unique().to_string(),
                       "action": "borrow", "amount": "1" }),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);

    let (status, took) = stop(child).await;
    assert!(status.success(), "exit 0 after SIGTERM, got {status:?}");
    assert!(
        took < Duration::from_secs(5),
        "the stop waited on the subscriber: {took:?}"
    );
    let kept = client
        .query_opt("SELECT 1 FROM tx_log WHERE signature = 'kept-at-stop'", &[])
        .await
        .unwrap();
    assert!(kept.is_some());
    drop(stuck);
}

/// Logs written to a file or a pipe carry no colour codes, and PostgreSQL's
/// NOTICEs (`relation "schema_migrations" already exists, skipping`, on every
/// start and every CLI command) are not logged at INFO.
#[actix_rt::test]
async fn logs_to_a_pipe_are_plain_and_quiet() {
    let db = TestDb::create().await;
    for _ in 0..2 {
        let out = Command::new(BIN)
            .arg("migrate")
            .env("DATABASE_URL", &db.url)
            .env("RUST_LOG", "info")
            .env_remove("SUPER_ADMIN_PUBKEY")
            .output()
            .unwrap();
        assert!(out.status.success());
        let logs = String::from_utf8_lossy(&out.stderr);
        assert!(!logs.contains('\u{1b}'), "colour codes in a pipe: {logs:?}");
        assert!(
            !logs.contains("NOTICE"),
            "PostgreSQL notices at INFO: {logs}"
        );
    }
}
