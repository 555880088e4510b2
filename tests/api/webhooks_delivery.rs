//! The deliverer against real receivers on loopback (docs/design.md §18):
//! signed as Standard Webhooks signs (checked here with an HMAC of the
//! test's own), in order and one at a time per webhook, retried through
//! failures, disabled by 410 or a spent retry window, bounded against
//! receivers that hang, redirect, cut or overrun their answer, and refusing a target
//! whose address became private.

use std::time::Duration;

use base64::Engine;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::common::*;
use crate::fixtures::receiver::{Receiver, Reply};
use crate::fixtures::webhooks::{created, deliveries, queue, queue_together, read};

async fn app_with(tweak: impl FnOnce(&mut lendex::config::Config)) -> TestApp {
    spawn_app_with(|c| {
        c.webhooks.allow_private_targets = true;
        tweak(c);
    })
    .await
}

fn event(owner: &str, change_id: &str) -> Value {
    json!([{ "type": "health.below", "owner": owner, "account_health_factor_wad": "900000000000000000",
             "below_wad": "1000000000000000000", "slot": 7, "change_id": change_id }])
}

/// Waits until every delivery of `webhook` has left `pending`.
async fn settled(app: &TestApp, webhook: &str, within: Duration) -> Vec<Value> {
    let mut last = Vec::new();
    let done = eventually(within, async || {
        last = deliveries(app, webhook).await;
        last.iter().all(|d| d["status"] != "pending")
    })
    .await;
    assert!(done, "still pending: {last:?}");
    last
}

/// `v1,` + base64(HMAC-SHA256(key, "id.timestamp.body")), computed here.
fn expected_signature(secret: &str, id: &str, timestamp: &str, body: &[u8]) -> String {
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    let tag = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    format!("v1,{tag}")
}

#[actix_rt::test]
async fn deliveries_are_signed_and_sent_in_order_once_each() {
    let app = app_with(|_| {}).await;
    let receiver = Receiver::start(vec![]);
    let (webhook, secret) = created(&app, &receiver.url).await;
    let owner = Wallet::new().pubkey();
    let first = queue(&app, &webhook, "5.1", event(&owner, "5.1")).await;
    let second = queue(&app, &webhook, "5.2", event(&owner, "5.2")).await;
    let list = settled(&app, &webhook, Duration::from_secs(10)).await;
    for d in &list {
        assert_eq!(
            (&d["status"], &d["attempts"], &d["last_status"]),
            (&json!("delivered"), &json!(1), &json!(200))
        );
    }
    let got = receiver.received();
    assert_eq!(got.len(), 2, "each once");
    for (request, (id, change)) in got.iter().zip([(&first, "5.1"), (&second, "5.2")]) {
        assert_eq!(request.header("webhook-id"), id);
        assert_eq!(request.header("content-type"), "application/json");
        let timestamp = request.header("webhook-timestamp");
        let sent_at: i64 = timestamp.parse().unwrap();
        assert!((chrono::Utc::now().timestamp() - sent_at).abs() < 60);
        assert_eq!(
            request.header("webhook-signature"),
            expected_signature(&secret, id, timestamp, &request.body)
        );
        let body = request.json();
        assert_eq!(body["webhook_id"], webhook.as_str());
        assert_eq!(body["delivery_id"], id.as_str());
        assert_eq!(body["change_id"], change);
        assert_eq!(body["events"], event(&owner, change));
    }
    assert!(got[0].at <= got[1].at, "in order");
    // Health and metrics say so.
    let (_, health) = app.get("/api/health").await;
    let check = &health["checks"]["webhooks"];
    assert_eq!(check["enabled"], true, "{check}");
    assert_eq!(
        (
            &check["active"],
            &check["pending"],
            &check["oldest_pending_age_ms"]
        ),
        (&json!(1), &json!(0), &Value::Null)
    );
    // (The recorder is the process's: other tests' deliveries count too.)
    let metrics = app.metrics_text().await;
    let value = |series: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {series} in {metrics}"))
    };
    assert!(value("lendex_webhook_deliveries_total{outcome=\"delivered\"}") >= 2.0);
    assert!(value("lendex_webhook_delivery_latency_seconds_count") >= 2.0);
    assert!(value("lendex_webhook_oldest_pending_seconds") >= 0.0);
}

#[actix_rt::test]
async fn failures_are_retried_then_delivered_and_the_next_waits() {
    let app = app_with(|_| {}).await;
    let receiver = Receiver::start(vec![
        Reply::Status(500),
        Reply::Redirect("http://127.0.0.1:9/elsewhere".into()),
        Reply::Large(100 * 1024 * 1024),
    ]);
    let (webhook, _) = created(&app, &receiver.url).await;
    let owner = Wallet::new().pubkey();
    let first = queue(&app, &webhook, "5.1", event(&owner, "5.1")).await;
    let second = queue(&app, &webhook, "5.2", event(&owner, "5.2")).await;
    // Waits of up to 1, 2 and 4 s.
    let list = settled(&app, &webhook, Duration::from_secs(30)).await;
    assert_eq!(list[0]["delivery_id"], first.as_str());
    assert_eq!(
        (
            &list[0]["status"],
            &list[0]["attempts"],
            &list[0]["last_status"]
        ),
        (&json!("delivered"), &json!(4), &json!(200))
    );
    assert_eq!(list[1]["attempts"], 1);
    let ids: Vec<String> = receiver
        .received()
        .iter()
        .map(|r| r.header("webhook-id").to_string())
        .collect();
    // The same id on every attempt, and the second only after the first.
    assert_eq!(
        ids,
        [&first, &first, &first, &first, &second].map(String::clone)
    );
}

#[actix_rt::test]
async fn each_failure_is_told_with_its_status_and_error() {
    let app = app_with(|c| c.webhooks.timeout_ms = 3_000).await;
    let cases = [
        (Reply::Status(503), Some(503), "answered 503"),
        (
            Reply::Redirect("http://127.0.0.1:9/x".into()),
            Some(302),
            "answered 302",
        ),
        (
            Reply::Large(100 * 1024 * 1024),
            Some(200),
            "answer over 64 KiB",
        ),
        (Reply::Hang, None, "no answer within"),
    ];
    let mut webhooks = Vec::new();
    for (reply, _, _) in &cases {
        // The retry after the failure answers 200, but not before its wait.
        let receiver = Receiver::start(vec![reply.clone(), Reply::Hang]);
        let (webhook, _) = created(&app, &receiver.url).await;
        queue(&app, &webhook, "5.1", event(&Wallet::new().pubkey(), "5.1")).await;
        webhooks.push((webhook, receiver));
    }
    for ((webhook, _), (_, status, error)) in webhooks.iter().zip(&cases) {
        let mut last = Vec::new();
        let told = eventually(Duration::from_secs(15), async || {
            last = deliveries(&app, webhook).await;
            last[0]["attempts"].as_i64() >= Some(1)
        })
        .await;
        assert!(told, "{last:?}");
        assert_eq!(last[0]["status"], "pending", "retried: {last:?}");
        assert_eq!(last[0]["last_status"], json!(status));
        let said = last[0]["last_error"].as_str().unwrap();
        assert!(said.contains(error), "{said} (wanted {error})");
    }
    // An answer cut half-way is a failure, whatever its status said.
    let (cut, _) = created(&app, &crate::fixtures::receiver::cutting().await).await;
    queue(&app, &cut, "5.1", event(&Wallet::new().pubkey(), "5.1")).await;
    let mut last = Vec::new();
    let told = eventually(Duration::from_secs(15), async || {
        last = deliveries(&app, &cut).await;
        last[0]["attempts"].as_i64() >= Some(1)
    })
    .await;
    assert!(told, "{last:?}");
    assert_eq!(
        (&last[0]["status"], &last[0]["last_status"]),
        (&json!("pending"), &json!(200))
    );
    assert!(
        last[0]["last_error"]
            .as_str()
            .unwrap()
            .contains("answer cut"),
        "{last:?}"
    );
    // A hanging receiver holds up its own webhook alone: a fresh one is
    // delivered meanwhile.
    let prompt = Receiver::start(vec![]);
    let (webhook, _) = created(&app, &prompt.url).await;
    queue(&app, &webhook, "5.9", event(&Wallet::new().pubkey(), "5.9")).await;
    settled(&app, &webhook, Duration::from_secs(5)).await;
}

#[actix_rt::test]
async fn a_410_disables_the_webhook_and_fails_what_it_had_pending() {
    let app = app_with(|_| {}).await;
    let receiver = Receiver::start(vec![Reply::Status(410)]);
    let (webhook, _) = created(&app, &receiver.url).await;
    let owner = Wallet::new().pubkey();
    // Both at once: the 410 fails what is pending when it comes.
    let both = [("5.1", event(&owner, "5.1")), ("5.2", event(&owner, "5.2"))];
    queue_together(&app, &webhook, &both).await;
    let list = settled(&app, &webhook, Duration::from_secs(10)).await;
    assert_eq!(
        (&list[0]["status"], &list[0]["last_status"]),
        (&json!("failed"), &json!(410))
    );
    assert_eq!(list[1]["status"], "failed");
    assert!(list[1]["last_error"].as_str().unwrap().contains("410"));
    assert_eq!(receiver.received().len(), 1, "nothing after the 410");
    let (_, listed) = read(&app, &app.root, "/api/webhooks").await;
    let hook = &listed["webhooks"][0];
    assert_eq!(hook["status"], "disabled");
    assert!(hook["disabled_reason"].as_str().unwrap().contains("410"));
    let (_, health) = app.get("/api/health").await;
    assert_eq!(health["checks"]["webhooks"]["disabled"], 1);
}

/// The producer stores nothing for a webhook disabled before its commit:
/// a disabled webhook's queue stays empty.
#[actix_rt::test]
async fn a_disabled_webhook_is_given_no_new_delivery() {
    let app = app_with(|_| {}).await;
    let receiver = Receiver::start(vec![Reply::Status(410)]);
    let (webhook, _) = created(&app, &receiver.url).await;
    let owner = Wallet::new().pubkey();
    queue(&app, &webhook, "5.1", event(&owner, "5.1")).await;
    settled(&app, &webhook, Duration::from_secs(10)).await;
    let draft = |change: &str| lendex::store::webhooks::produce::Draft {
        tick: 1_000_000,
        delivery_id: lendex::domain::webhooks::delivery_id(&webhook, change, 0),
        webhook_id: webhook.clone(),
        change_id: change.into(),
        events: event(&owner, change),
    };
    let pool = app.db.pool();
    let through =
        lendex::store::webhooks::produce::store(&pool, "localnet", &[draft("5.3")], 1_000_000)
            .await
            .unwrap();
    assert_eq!(through, 1_000_000, "the cursor moves past it");
    let list = deliveries(&app, &webhook).await;
    assert_eq!(list.len(), 1, "{list:?}");
}

#[actix_rt::test]
async fn a_spent_retry_window_fails_the_delivery_and_disables_its_webhook() {
    let app = app_with(|c| c.webhooks.retry_seconds = 2).await;
    let receiver = Receiver::start(vec![Reply::Status(500); 100]);
    let (webhook, _) = created(&app, &receiver.url).await;
    queue(&app, &webhook, "5.1", event(&Wallet::new().pubkey(), "5.1")).await;
    let list = settled(&app, &webhook, Duration::from_secs(20)).await;
    assert_eq!(
        (&list[0]["status"], &list[0]["last_status"]),
        (&json!("failed"), &json!(500))
    );
    let (_, listed) = read(&app, &app.root, "/api/webhooks").await;
    let hook = &listed["webhooks"][0];
    assert_eq!(hook["status"], "disabled");
    assert!(
        hook["disabled_reason"]
            .as_str()
            .unwrap()
            .contains("answered 500"),
        "{hook}"
    );
}

#[actix_rt::test]
async fn a_target_whose_address_is_refused_now_is_a_failed_attempt() {
    // Created while private targets were allowed; refused at the attempt.
    let app = spawn_app_with(|c| c.webhooks.allow_private_targets = false).await;
    let receiver = Receiver::start(vec![]);
    let webhook = "wh_00000000000000000000000a";
    let db = app.db.connect().await;
    db.execute(
        "INSERT INTO webhooks (id, cluster, url, below_wad, secret, created_by, created_tick)
         VALUES ($1, 'localnet', $2, 1000000000000000000, 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=', $3, 0)",
        &[&webhook, &receiver.url, &app.root.pubkey()],
    )
    .await
    .unwrap();
    queue(&app, webhook, "5.1", event(&Wallet::new().pubkey(), "5.1")).await;
    let mut last = Vec::new();
    let told = eventually(Duration::from_secs(10), async || {
        last = deliveries(&app, webhook).await;
        last[0]["attempts"].as_i64() >= Some(1)
    })
    .await;
    assert!(told, "{last:?}");
    assert!(
        last[0]["last_error"].as_str().unwrap().contains("loopback"),
        "{last:?}"
    );
    assert!(receiver.received().is_empty(), "never called");
}
