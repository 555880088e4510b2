//! The webhook receivers a developer copies (examples/python,
//! examples/typescript) verify real deliveries with the `standardwebhooks`
//! package (not with the sender's code), skip a redelivered one as a
//! duplicate, and refuse a forged one.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

use crate::common::*;
use crate::fixtures::webhooks::{create, queue};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A receiver example started on `port` with `secret`; its output's lines.
async fn start(
    program: PathBuf,
    script: PathBuf,
    port: u16,
    secret: &str,
) -> (Child, Lines<BufReader<ChildStdout>>) {
    let mut child = tokio::process::Command::new(program)
        .arg(script)
        .env("WEBHOOK_SECRET", secret)
        .env("PORT", port.to_string())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the example runs");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = next_line(&mut lines).await;
    assert_eq!(first, format!("listening on {port}"));
    (child, lines)
}

async fn next_line(lines: &mut Lines<BufReader<ChildStdout>>) -> String {
    tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("a line within 20 s")
        .unwrap()
        .expect("the example still runs")
}

#[actix_rt::test]
async fn receiver_examples_verify_deliveries_and_skip_repeats() {
    let app = spawn_app_with(|c| c.webhooks.allow_private_targets = true).await;
    assert!(
        root().join(".venv-examples/bin/python").exists()
            && root()
                .join("examples/typescript/node_modules/standardwebhooks")
                .exists(),
        "run scripts/ensure-examples first (scripts/test does)"
    );
    let runners = [
        (
            PathBuf::from("node"),
            root().join("examples/typescript/webhook-receiver.mjs"),
        ),
        (
            root().join(".venv-examples/bin/python"),
            root().join("examples/python/webhook_receiver.py"),
        ),
    ];
    for (program, script) in runners {
        let port = free_port();
        let url = format!("http://127.0.0.1:{port}/lendex");
        let (status, created) = create(&app, &app.root, json!({ "url": url })).await;
        assert_eq!(status, 201);
        let (id, secret) = (
            created["id"].as_str().unwrap().to_string(),
            created["secret"].as_str().unwrap().to_string(),
        );
        let (_child, mut lines) = start(program, script.clone(), port, &secret).await;
        let owner = Wallet::new().pubkey();
        let events = json!([{ "type": "health.below", "owner": owner,
            "account_health_factor_wad": "950000000000000000", "below_wad": "1000000000000000000",
            "slot": 9, "change_id": "7.3" }]);
        let delivery = queue(&app, &id, "7.3", events).await;
        assert_eq!(
            next_line(&mut lines).await,
            format!("health.below {owner} 950000000000000000 below 1000000000000000000 change 7.3"),
            "{script:?}"
        );
        // Sent again (an operator's redelivery): the same id, skipped.
        let action = format!("redeliver_webhook:{id}:{delivery}");
        let (nonce, signature) = app.signed(&app.root, &action).await;
        let body = json!({ "actor": app.root.pubkey(), "nonce": nonce, "signature": signature,
                           "delivery_id": delivery });
        assert_eq!(
            app.post(&format!("/api/webhooks/{id}/redeliver"), &body)
                .await
                .0,
            202
        );
        assert_eq!(next_line(&mut lines).await, format!("duplicate {delivery}"));
        // A delivery signed with another key is refused.
        let forged = app
            .http
            .post(&url)
            .header("webhook-id", "msg_00000000000000000000000000000000")
            .header(
                "webhook-timestamp",
                chrono::Utc::now().timestamp().to_string(),
            )
            .header(
                "webhook-signature",
                "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
            )
            .body(r#"{"events":[]}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(forged.status(), 401);
        assert!(next_line(&mut lines).await.starts_with("refused"));
    }
}
