//! The real `lendex` binary: graceful shutdown, the operator CLI, and the
//! environment names operators and harnesses use.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_lendex");

/// Runs `lendex <args>` against `db` with the short env names; returns (success, stdout+stderr).
fn lendex(db: &TestDb, args: &[&str]) -> (bool, String) {
    let out = Command::new(BIN)
        .args(args)
        .env("DATABASE_URL", &db.url)
        .env_remove("SUPER_ADMIN_PUBKEY")
        .output()
        .expect("run lendex");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// A `lendex serve` child process, killed when dropped: a test that fails
/// midway leaves no server behind.
pub(crate) struct Served(pub std::process::Child);

impl std::ops::Deref for Served {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for Served {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `lendex serve` on `port` against `db`, no chain, no background sync, no
/// drain wait at a stop, plus `env`.
pub(crate) fn serve(db: &TestDb, port: u16, env: &[(&str, &str)]) -> Served {
    Served(serve_command(db, port, env).spawn().unwrap())
}

/// The command `serve` runs, for a test that wants its output (stderr).
pub(crate) fn serve_command(db: &TestDb, port: u16, env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(BIN);
    command
        .arg("serve")
        .env("DATABASE_URL", &db.url)
        .env("BIND_ADDR", format!("127.0.0.1:{port}"))
        .env("RPC_URL", "http://127.0.0.1:9")
        .env("LENDEX_SYNC__INTERVAL_SECONDS", "0")
        // No balancer in front: a stop need not wait for one to notice.
        .env("LENDEX_SERVER__DRAIN_MS", "0")
        .envs(env.iter().copied())
        .env_remove("SUPER_ADMIN_PUBKEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// The replica that leads among `ports` (health's sync role).
pub(crate) async fn leader_of(http: &reqwest::Client, ports: &[u16]) -> Option<u16> {
    for port in ports {
        let Ok(res) = http
            .get(format!("http://127.0.0.1:{port}/api/health"))
            .send()
            .await
        else {
            continue;
        };
        let body: serde_json::Value = res.json().await.unwrap_or_default();
        if body["checks"]["sync"]["role"] == "leader" {
            return Some(*port);
        }
    }
    None
}

/// Two `lendex serve` replicas on `db` with `env`, both up and one of them
/// leading: the children, their ports, the leader's port.
pub(crate) async fn leading_pair(
    db: &TestDb,
    env: &[(&str, &str)],
) -> (Vec<Served>, [u16; 2], u16) {
    let http = reqwest::Client::new();
    let ports: [u16; 2] = free_ports();
    let children: Vec<Served> = ports.iter().map(|p| serve(db, *p, env)).collect();
    for port in ports {
        wait_until_up(&http, &format!("http://127.0.0.1:{port}")).await;
    }
    let mut leader = None;
    let led = eventually(Duration::from_secs(20), async || {
        leader = leader_of(&http, &ports).await;
        leader.is_some()
    })
    .await;
    assert!(led, "one of two replicas leads");
    (children, ports, leader.expect("checked"))
}

/// Sends SIGTERM to a spawned server.
pub(crate) fn sigterm(child: &Served) {
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
}

/// Sends SIGTERM and waits; the exit status and how long the stop took.
pub(crate) async fn stop(child: Served) -> (std::process::ExitStatus, Duration) {
    let started = Instant::now();
    sigterm(&child);
    let mut child = child;
    // Bounded: a stop that hangs fails the test instead of the suite.
    let status = tokio::task::spawn_blocking(move || {
        let until = Instant::now() + Duration::from_secs(40);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return Some(status);
            }
            if Instant::now() > until {
                let _ = child.kill();
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    })
    .await
    .unwrap()
    .expect("the service did not stop within 40 s");
    (status, started.elapsed())
}

pub(crate) async fn wait_until_up(http: &reqwest::Client, base: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if http.get(format!("{base}/api/health")).send().await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("server did not start");
}

/// A graceful stop with feed subscribers connected is prompt: their streams end
/// (they never finish on their own; the stop used to wait its whole 30 s timeout).
#[actix_rt::test]
async fn sigterm_with_feed_subscribers_stops_promptly() {
    let db = TestDb::create().await;
    let port = free_port();
    let child = serve(
        &db,
        port,
        &[("LENDEX_SERVER__SHUTDOWN_TIMEOUT_SECONDS", "30")],
    );
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    wait_until_up(&http, &base).await;
    let mut streams = Vec::new();
    for _ in 0..3 {
        let mut res = http
            .get(format!("{base}/api/positions/unhealthy/stream"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 200);
        streams.push(tokio::spawn(async move {
            // Read until the server ends the stream.
            while let Ok(Some(_)) = res.chunk().await {}
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, took) = stop(child).await;
    assert!(status.success(), "exit 0 after SIGTERM, got {status:?}");
    assert!(took < Duration::from_secs(10), "the stop took {took:?}");
    for s in streams {
        tokio::time::timeout(Duration::from_secs(5), s)
            .await
            .expect("every stream ended")
            .unwrap();
    }
}

#[actix_rt::test]
async fn sigterm_during_a_burst_loses_no_acknowledged_write() {
    let db = TestDb::create().await;
    let port = free_port();
    let mut child = serve(
        &db,
        port,
        &[("LENDEX_LIMITS__PUBLIC_WRITE_PER_SECOND", "0")],
    );
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    wait_until_up(&http, &base).await;

    let wallet = Wallet::new().pubkey();
    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut senders = Vec::new();
    for worker in 0..16 {
        let (http, base, wallet, acked) =
            (http.clone(), base.clone(), wallet.clone(), acked.clone());
        senders.push(tokio::spawn(async move {
            for i in 0..400 {
                let sig = format!("term{worker}x{i}");
                let body = json!({ "signature": sig, "wallet": wallet, "action": "deposit", "amount": "1" });
                match http.post(format!("{base}/api/transactions")).json(&body).send().await {
                    Ok(res) if res.status().is_success() => acked.lock().unwrap().push(sig),
                    Ok(_) => {}
                    Err(_) => break, // the server has stopped accepting
                }
            }
        }));
    }
    // Let the burst get going, then ask the server to stop in the middle of it.
    tokio::time::sleep(Duration::from_millis(700)).await;
    sigterm(&child);
    for s in senders {
        let _ = s.await;
    }
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "exit 0 after SIGTERM, got {status:?}");

    let acked = acked.lock().unwrap().clone();
    assert!(
        !acked.is_empty(),
        "the burst was acknowledged in part before the stop"
    );
    let client = db.connect().await;
    let stored: std::collections::HashSet<String> = client
        .query("SELECT signature FROM tx_log", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let lost: Vec<_> = acked.iter().filter(|s| !stored.contains(*s)).collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged writes lost: {:?}",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
}

#[actix_rt::test]
async fn operator_cli_adds_revokes_and_lists_with_audit() {
    let db = TestDb::create().await;
    let (ok, out) = lendex(&db, &["migrate"]);
    assert!(ok, "{out}");
    let w = Wallet::new().pubkey();
    let (ok, out) = lendex(
        &db,
        &["admin", "add", &w, "pool_admin", "--label", "recovery"],
    );
    assert!(ok, "{out}");
    let (ok, out) = lendex(&db, &["admin", "list"]);
    assert!(
        ok && out.contains(&w) && out.contains("active") && out.contains("recovery"),
        "{out}"
    );
    let (ok, out) = lendex(&db, &["admin", "revoke", &w]);
    assert!(ok, "{out}");
    let (ok, out) = lendex(&db, &["admin", "list"]);
    assert!(ok && out.contains("revoked"), "{out}");
    // Revoking again fails with a message, not a panic.
    let (ok, out) = lendex(&db, &["admin", "revoke", &w]);
    assert!(!ok && out.contains("no active allowlist entry"), "{out}");
    // Bad input is refused.
    let (ok, out) = lendex(&db, &["admin", "add", "nope", "pool_admin"]);
    assert!(!ok && out.contains("bad pubkey"), "{out}");
    let (ok, out) = lendex(&db, &["admin", "add", &w, "king"]);
    assert!(!ok && out.contains("role"), "{out}");

    let client = db.connect().await;
    let rows = client
        .query(
            "SELECT actor, action FROM audit_log WHERE target = $1 ORDER BY id",
            &[&w],
        )
        .await
        .unwrap();
    let audit: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(
        audit,
        vec![
            ("system".into(), "add_admin".into()),
            ("system".into(), "revoke_admin".into())
        ]
    );
}

#[actix_rt::test]
async fn bootstrap_from_short_env_name_and_bad_settings_refused() {
    let db = TestDb::create().await;
    let root = Wallet::new().pubkey();
    let out = Command::new(BIN)
        .args(["migrate"])
        .env("DATABASE_URL", &db.url)
        .env("SUPER_ADMIN_PUBKEY", &root)
        .output()
        .unwrap();
    assert!(out.status.success());
    let client = db.connect().await;
    let row = client
        .query_one(
            "SELECT role, label, added_by FROM pool_admins WHERE pubkey = $1",
            &[&root],
        )
        .await
        .unwrap();
    assert_eq!(
        (
            row.get::<_, String>(0),
            row.get::<_, String>(1),
            row.get::<_, String>(2)
        ),
        ("super_admin".into(), "bootstrap".into(), "system".into())
    );
    // A malformed key, cluster or program id is refused at start with a message.
    for (name, value) in [
        ("SUPER_ADMIN_PUBKEY", "nope"),
        ("CLUSTER", "testnet"),
        ("PROGRAM_ID", "x"),
    ] {
        let out = Command::new(BIN)
            .args(["migrate"])
            .env("DATABASE_URL", &db.url)
            .env(name, value)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{name}={value} accepted");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("lendex:"),
            "{name}"
        );
    }
}

#[test]
fn help_lists_every_command() {
    let out = Command::new(BIN).args(["--help"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for cmd in ["serve", "migrate", "config", "admin"] {
        assert!(text.contains(cmd), "--help lists {cmd}");
    }
    let out = Command::new(BIN)
        .args(["admin", "--help"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for cmd in ["add", "revoke", "list"] {
        assert!(text.contains(cmd), "admin --help lists {cmd}");
    }
}

/// Precedence: built-in defaults < config file < short env names < LENDEX_<SECTION>__<KEY>.
#[test]
fn effective_config_honours_file_and_env_names() {
    let dir = std::env::temp_dir().join(format!("lendex-cfg-{}", rand::random::<u32>()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("custom.toml");
    std::fs::write(
        &file,
        "[rpc]\ntimeout_ms = 1234\nmax_rps = 7\n[sync]\ninterval_seconds = 3\n",
    )
    .unwrap();
    let root = Wallet::new().pubkey();
    let out = Command::new(BIN)
        .args(["--config", file.to_str().unwrap(), "config"])
        .env("DATABASE_URL", "postgres://u:secret@db.example:5432/x")
        .env("RPC_URL", "http://rpc.example:8899")
        .env("CLUSTER", "devnet")
        .env("SUPER_ADMIN_PUBKEY", &root)
        .env("BIND_ADDR", "0.0.0.0:9000")
        .env("PROGRAM_ID", "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")
        .env("LENDEX_RPC__MAX_RPS", "99")
        .env("LENDEX_LIMITS__PUBLIC_WRITE_BURST", "5")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let config: toml::Table = text.parse().unwrap();
    assert_eq!(
        config["database"]["url"].as_str(),
        Some("postgres://u:***@db.example:5432/x")
    );
    assert_eq!(
        config["rpc"]["url"].as_str(),
        Some("http://rpc.example:8899")
    );
    assert_eq!(
        config["rpc"]["timeout_ms"].as_integer(),
        Some(1234),
        "from the file"
    );
    assert_eq!(
        config["rpc"]["max_rps"].as_integer(),
        Some(99),
        "LENDEX_ wins over the file"
    );
    assert_eq!(config["sync"]["interval_seconds"].as_integer(), Some(3));
    assert_eq!(config["chain"]["cluster"].as_str(), Some("devnet"));
    assert_eq!(
        config["chain"]["program_id"].as_str(),
        Some("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")
    );
    assert_eq!(
        config["auth"]["super_admin_pubkey"].as_str(),
        Some(root.as_str())
    );
    assert_eq!(config["server"]["bind"].as_str(), Some("0.0.0.0:9000"));
    assert_eq!(config["limits"]["public_write_burst"].as_integer(), Some(5));
    assert_eq!(
        config["cache"]["max_owners"].as_integer(),
        Some(1_000_000),
        "untouched default"
    );
    // A named file that does not exist is an error, not silently the defaults.
    let out = Command::new(BIN)
        .args(["--config", "/nonexistent/x.toml", "config"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}
