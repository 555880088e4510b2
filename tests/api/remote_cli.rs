//! `lendex keygen` and `lendex remote` (docs/design.md §9), the real binary against a
//! running service: the operator path of the README from a new keypair to admin
//! calls, pool registration read from the chain, and mainnet's signed audit read.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::chain_support::*;
use crate::common::*;

const BIN: &str = env!("CARGO_BIN_EXE_lendex");

struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|_| panic!("stdout: {}", self.stdout))
    }
}

/// `lendex <args>` with `env`, without blocking the test's own server.
async fn lendex(args: &[&str], env: &[(&str, &str)]) -> Run {
    let out = tokio::process::Command::new(BIN)
        .args(args)
        .envs(env.iter().copied())
        .env_remove("SUPER_ADMIN_PUBKEY")
        .env_remove("LENDEX_URL")
        .output()
        .await
        .expect("run lendex");
    Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lendex-{name}-{}", rand::random::<u64>()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn remote(app: &TestApp, keypair: &Path, args: &[&str]) -> Run {
    let mut all = vec![
        "remote",
        "--url",
        &app.base,
        "--keypair",
        keypair.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    lendex(&all, &[]).await
}

#[actix_rt::test]
async fn a_new_operator_becomes_admin_and_manages_the_allowlist() {
    let app = spawn_app().await;
    let dir = temp_dir("operator");
    let keyfile = dir.join("id.json");
    let keyfile_str = keyfile.to_str().unwrap();

    // 1. A keypair, in the Solana CLI format; never overwritten.
    let made = lendex(&["keygen", "--outfile", keyfile_str], &[]).await;
    assert!(made.ok, "{}", made.stderr);
    let operator = made.stdout.trim().to_string();
    let bytes: Vec<u8> = serde_json::from_str(&std::fs::read_to_string(&keyfile).unwrap()).unwrap();
    assert_eq!(bytes.len(), 64);
    assert_eq!(bs58::encode(&bytes[32..]).into_string(), operator);
    let again = lendex(&["keygen", "--outfile", keyfile_str], &[]).await;
    assert!(!again.ok && again.stderr.contains("refusing to overwrite"));

    // 2. Not an admin yet: the server's error body on stderr, exit 1.
    let newcomer = Wallet::new().pubkey();
    let refused = remote(&app, &keyfile, &["add-admin", &newcomer, "pool_admin"]).await;
    assert!(!refused.ok);
    assert_eq!(refused.stderr.trim(), r#"{"error":"not authorized"}"#);
    assert!(refused.stdout.is_empty());

    // 3. The operator CLI makes it a super-admin (the recovery path).
    let promoted = lendex(
        &["admin", "add", &operator, "super_admin"],
        &[("DATABASE_URL", &app.db.url)],
    )
    .await;
    assert!(promoted.ok, "{}", promoted.stderr);

    // 4. Signed calls over HTTP.
    let added = remote(
        &app,
        &keyfile,
        &["add-admin", &newcomer, "pool_admin", "--label", "ops team"],
    )
    .await;
    assert!(added.ok, "{}", added.stderr);
    assert_eq!(added.json(), serde_json::json!({ "ok": true }));
    let (_, list) = app.get("/api/admin/allowlist").await;
    let entry = list["admins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["pubkey"] == newcomer)
        .cloned()
        .unwrap();
    assert_eq!(
        (
            entry["role"].as_str(),
            entry["label"].as_str(),
            entry["added_by"].as_str()
        ),
        (
            Some("pool_admin"),
            Some("ops team"),
            Some(operator.as_str())
        )
    );

    let revoked = remote(&app, &keyfile, &["revoke-admin", &newcomer]).await;
    assert!(revoked.ok, "{}", revoked.stderr);
    let twice = remote(&app, &keyfile, &["revoke-admin", &newcomer]).await;
    assert!(!twice.ok);
    assert_eq!(twice.stderr.trim(), r#"{"error":"not found"}"#);
    let bad = remote(&app, &keyfile, &["add-admin", &newcomer, "root"]).await;
    assert!(
        !bad.ok && bad.stderr.contains("invalid role root"),
        "{}",
        bad.stderr
    );

    // 5. The audit log shows both calls, by this operator: a table for people,
    // the server's JSON with --json.
    let table = remote(
        &app,
        &keyfile,
        &["audit", "--actor", &operator, "--limit", "10"],
    )
    .await;
    assert!(table.ok, "{}", table.stderr);
    let lines: Vec<&str> = table.stdout.lines().collect();
    assert!(
        lines[0].starts_with("TIME") && lines[0].ends_with("DETAILS"),
        "{}",
        table.stdout
    );
    assert!(
        lines.iter().any(|l| l.contains(" UTC  ")
            && l.contains(&operator)
            && l.contains("add_admin")
            && l.contains("role=pool_admin")),
        "{}",
        table.stdout
    );
    let audit = remote(
        &app,
        &keyfile,
        &["audit", "--actor", &operator, "--limit", "10", "--json"],
    )
    .await;
    assert!(audit.ok, "{}", audit.stderr);
    let actions: Vec<String> = audit.json()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap().to_string())
        .collect();
    assert!(
        actions.contains(&"add_admin".to_string()) && actions.contains(&"revoke_admin".to_string()),
        "{actions:?}"
    );

    // A keypair file that is not one is refused before anything is signed.
    std::fs::write(dir.join("bad.json"), "[1,2,3]").unwrap();
    let broken = remote(&app, &dir.join("bad.json"), &["revoke-admin", &operator]).await;
    assert!(
        !broken.ok && broken.stderr.contains("64 bytes"),
        "{}",
        broken.stderr
    );
    // The audit log is public here: read with no keypair at all.
    let public = remote(&app, &dir.join("none.json"), &["audit", "--json"]).await;
    assert!(public.ok, "{}", public.stderr);
    assert!(!public.json()["entries"].as_array().unwrap().is_empty());
    std::fs::remove_dir_all(dir).unwrap();
}

#[actix_rt::test]
async fn mainnet_audit_reads_are_signed_in_headers() {
    let app = spawn_app_with(|c| c.chain.cluster = lendex::config::Cluster::Mainnet).await;
    let dir = temp_dir("audit");
    let admin = Wallet::new();
    app.add_admin(&admin, "pool_admin").await;
    admin.save(&dir.join("admin.json"));
    let read = remote(
        &app,
        &dir.join("admin.json"),
        &["audit", "--action", "add_admin", "--json"],
    )
    .await;
    assert!(read.ok, "{}", read.stderr);
    assert!(!read.json()["entries"].as_array().unwrap().is_empty());

    let stranger = Wallet::new();
    stranger.save(&dir.join("stranger.json"));
    let refused = remote(&app, &dir.join("stranger.json"), &["audit"]).await;
    assert!(!refused.ok);
    assert_eq!(refused.stderr.trim(), r#"{"error":"forbidden"}"#);
    std::fs::remove_dir_all(dir).unwrap();
}

#[actix_rt::test]
async fn register_pool_fills_the_request_from_the_chain() {
    let t = ChainApp::start().await;
    let dir = temp_dir("register");
    t.admin.save(&dir.join("admin.json"));
    let (address, pool) = t.create_pool(6, Some(100_000_000), Some(-8)).await;
    let keypair = dir.join("admin.json");
    let args_with = |a: &str, symbol: &str| -> Vec<String> {
        ["remote", "--url", &t.app.base, "--keypair", keypair.to_str().unwrap(), "register-pool", a, "--init-signature", "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UaKdiSkoQ", "--symbol", symbol]
            .iter().map(|s| s.to_string()).collect()
    };
    let args = |a: &str| args_with(a, "TKN");
    // No RPC here: the service reads the pool from its own chain.
    let env = [("RPC_URL", "http://127.0.0.1:9")];
    let run = |a: Vec<String>| async move {
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        lendex(&refs, &env).await
    };
    let registered = run(args(&address.to_string())).await;
    assert!(registered.ok, "{}", registered.stderr);
    assert_eq!(registered.json()["created"], true);
    let (_, pools) = t.app.get("/api/pools").await;
    let row = &pools["pools"][0];
    assert_eq!(
        (row["pool_address"].as_str(), row["symbol"].as_str()),
        (Some(address.to_string().as_str()), Some("TKN"))
    );
    assert_eq!(row["vault"], pool.vault.to_string());

    // Again with another symbol: nothing changes, and both the answer and the
    // audit entry say which symbol is in force.
    let again = run(args_with(&address.to_string(), "NEW")).await;
    assert!(again.ok, "{}", again.stderr);
    assert_eq!(again.json()["created"], false);
    assert_eq!(again.json()["symbol"], "TKN");
    let (_, audit) = t.app.get("/api/admin/audit?action=init_pool&limit=1").await;
    let details = &audit["entries"][0]["details"];
    assert_eq!(
        (
            &details["created"],
            &details["symbol"],
            &details["symbol_not_applied"]
        ),
        (
            &serde_json::json!(false),
            &serde_json::json!("TKN"),
            &serde_json::json!("NEW")
        ),
        "{details}"
    );

    // Not the mint's pool address (the mint itself), and no account at all.
    let mint = run(args(&pool.token_mint.to_string())).await;
    assert!(
        !mint.ok && mint.stderr.trim() == r#"{"error":"invalid"}"#,
        "{}",
        mint.stderr
    );
    let elsewhere = lendex::domain::pubkey::Pubkey::new_unique();
    t.chain
        .set(
            &elsewhere,
            &t.program,
            &lendex::domain::accounts::encode_pool(&pool),
        )
        .await;
    let moved = run(args(&elsewhere.to_string())).await;
    assert!(
        !moved.ok && moved.stderr.trim() == r#"{"error":"invalid"}"#,
        "{}",
        moved.stderr
    );
    let nothing = run(args(
        &lendex::domain::pubkey::Pubkey::new_unique().to_string(),
    ))
    .await;
    assert!(
        !nothing.ok && nothing.stderr.trim() == r#"{"error":"pool account not found"}"#,
        "{}",
        nothing.stderr
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// The webhook commands, as an operator runs them: create (the secret in
/// the answer), list, deliveries, delete; a bad field is told as the
/// service says it.
#[actix_rt::test]
async fn webhooks_are_managed_from_the_command_line() {
    let app = spawn_app_with(|c| c.webhooks.allow_private_targets = true).await;
    let dir = temp_dir("webhooks");
    let keyfile = dir.join("root.json");
    app.root.save(&keyfile);
    let owner = Wallet::new().pubkey();
    let made = remote(
        &app,
        &keyfile,
        &[
            "create-webhook",
            "http://127.0.0.1:9/hook",
            "--below-wad",
            "1050000000000000000",
            "--owner",
            &owner,
            "--description",
            "desk",
        ],
    )
    .await;
    assert!(made.ok, "{}", made.stderr);
    let created = made.json();
    assert!(created["secret"].as_str().unwrap().starts_with("whsec_"));
    assert_eq!(created["owners"], serde_json::json!([owner]));
    let id = created["id"].as_str().unwrap();
    let listed = remote(&app, &keyfile, &["webhooks"]).await;
    assert!(listed.ok, "{}", listed.stderr);
    assert_eq!(listed.json()["webhooks"][0]["id"], id);
    let deliveries = remote(&app, &keyfile, &["webhook-deliveries", id, "--limit", "5"]).await;
    assert_eq!(deliveries.json(), serde_json::json!({ "deliveries": [] }));
    // The server's body as it sent it, the field at fault named.
    let bad = remote(&app, &keyfile, &["create-webhook", "ftp://example.com"]).await;
    assert!(!bad.ok);
    assert!(
        bad.stderr.contains(r#"{"error":"invalid","field":"url"}"#),
        "{} {}",
        bad.stdout,
        bad.stderr
    );
    let deleted = remote(&app, &keyfile, &["delete-webhook", id]).await;
    assert!(deleted.ok, "{}", deleted.stderr);
    assert_eq!(deleted.json()["id"], id);
    let listed = remote(&app, &keyfile, &["webhooks"]).await;
    assert_eq!(listed.json(), serde_json::json!({ "webhooks": [] }));
}
