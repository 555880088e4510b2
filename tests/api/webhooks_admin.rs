//! Webhooks managed through the signed handshake (docs/design.md §18):
//! create (the secret shown once), list, deliveries, delete, redeliver; a
//! pool_admin's limits; every change audited; bad input named and nothing
//! stored.

use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};

use crate::common::*;
use crate::fixtures::receiver::Receiver;
use crate::fixtures::webhooks::{create, created, delete, deliveries, queue, read};

const URL: &str = "http://127.0.0.1:9/hook";

async fn private_app() -> TestApp {
    spawn_app_with(|c| c.webhooks.allow_private_targets = true).await
}

fn ids(list: &Value) -> Vec<String> {
    let mut ids: Vec<String> = list["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

async fn audit(app: &TestApp, action: &str) -> Vec<(String, String)> {
    let db = app.db.connect().await;
    pairs(
        &db,
        &format!("SELECT actor, target FROM audit_log WHERE action = '{action}' ORDER BY id"),
    )
    .await
}

async fn stored(app: &TestApp) -> i64 {
    let db = app.db.connect().await;
    db.query_one("SELECT count(*) FROM webhooks", &[])
        .await
        .unwrap()
        .get(0)
}

#[actix_rt::test]
async fn a_webhook_is_created_shown_once_listed_and_deleted_with_audit() {
    let app = private_app().await;
    let owner = Wallet::new().pubkey();
    let (status, created) = create(
        &app,
        &app.root,
        json!({ "url": URL, "below_wad": "1050000000000000000", "owners": [owner],
                "description": "desk" }),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    let secret = created["secret"].as_str().unwrap();
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap();
    assert_eq!(key.len(), 32);
    assert_eq!(created["url"], URL);
    assert_eq!(created["below_wad"], "1050000000000000000");
    assert_eq!(created["owners"], json!([owner]));
    assert_eq!(created["pools"], Value::Null);
    assert_eq!(created["status"], "active");
    assert_eq!(created["created_by"], app.root.pubkey());
    assert_eq!(created["disabled_reason"], Value::Null);

    // Listed without its secret; no deliveries yet.
    let (status, list) = read(&app, &app.root, "/api/webhooks").await;
    assert_eq!(status, 200);
    assert_eq!(ids(&list), vec![id.clone()]);
    let listed = &list["webhooks"][0];
    assert!(listed.get("secret").is_none(), "{listed}");
    let mut without_secret = created.clone();
    without_secret.as_object_mut().unwrap().remove("secret");
    assert_eq!(listed, &without_secret);
    let deliveries = format!("/api/webhooks/{id}/deliveries");
    assert_eq!(
        read(&app, &app.root, &deliveries).await,
        (200, json!({ "deliveries": [] }))
    );

    // Deleted: answered as it was, gone from the list, its deliveries 404.
    let (status, deleted) = delete(&app, &app.root, &id).await;
    assert_eq!((status, &deleted), (200, &without_secret));
    assert_eq!(
        read(&app, &app.root, "/api/webhooks").await,
        (200, json!({ "webhooks": [] }))
    );
    assert_eq!(
        read(&app, &app.root, &deliveries).await,
        (404, error("not found"))
    );
    assert_eq!(
        delete(&app, &app.root, &id).await,
        (404, error("not found"))
    );
    let root = app.root.pubkey();
    assert_eq!(
        audit(&app, "create_webhook").await,
        vec![(root.clone(), id.clone())]
    );
    assert_eq!(audit(&app, "delete_webhook").await, vec![(root, id)]);
    // The secret is in no audit entry.
    let db = app.db.connect().await;
    let leaked: i64 = db
        .query_one(
            "SELECT count(*) FROM audit_log WHERE details::text LIKE '%whsec_%'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(leaked, 0);
}

#[actix_rt::test]
async fn a_pool_admin_sees_and_deletes_only_its_own() {
    let app = private_app().await;
    let pool_admin = Wallet::new();
    app.add_admin(&pool_admin, "pool_admin").await;
    let (_, mine) = create(&app, &pool_admin, json!({ "url": URL })).await;
    let (_, roots) = create(&app, &app.root, json!({ "url": URL })).await;
    let (mine, roots) = (
        mine["id"].as_str().unwrap().to_string(),
        roots["id"].as_str().unwrap().to_string(),
    );
    let (_, list) = read(&app, &pool_admin, "/api/webhooks").await;
    assert_eq!(ids(&list), vec![mine.clone()]);
    let (_, list) = read(&app, &app.root, "/api/webhooks").await;
    let mut both = vec![mine.clone(), roots.clone()];
    both.sort();
    assert_eq!(ids(&list), both);
    // Another's webhook is not found for a pool_admin, and stays.
    let others = format!("/api/webhooks/{roots}/deliveries");
    assert_eq!(
        read(&app, &pool_admin, &others).await,
        (404, error("not found"))
    );
    assert_eq!(
        delete(&app, &pool_admin, &roots).await,
        (404, error("not found"))
    );
    assert_eq!(stored(&app).await, 2);
    // A super_admin deletes anyone's.
    assert_eq!(delete(&app, &app.root, &mine).await.0, 200);
    // A wallet that is no admin is refused, and a revoked one at once.
    let stranger = Wallet::new();
    assert_eq!(
        create(&app, &stranger, json!({ "url": URL })).await,
        (401, error("not authorized"))
    );
    assert_eq!(
        read(&app, &stranger, "/api/webhooks").await,
        (401, error("not authorized"))
    );
    assert_eq!(stored(&app).await, 1);
}

#[actix_rt::test]
async fn each_signature_is_spent_on_its_own_action_only() {
    let app = private_app().await;
    let (_, created) = create(&app, &app.root, json!({ "url": URL })).await;
    let id = created["id"].as_str().unwrap().to_string();
    // A read signed for another action.
    let (nonce, signature) = app.signed(&app.root, "create_webhook").await;
    let res = app
        .http
        .get(app.url("/api/webhooks"))
        .header("x-actor", app.root.pubkey())
        .header("x-nonce", &nonce)
        .header("x-signature", &signature)
        .send()
        .await
        .unwrap();
    assert_eq!(decode(res).await.0, 401);
    // Credentials missing from the headers.
    assert_eq!(
        app.get("/api/webhooks").await,
        (400, error("missing fields"))
    );
    // A delete signed for another webhook's id.
    let other = "wh_000000000000000000000000";
    let (nonce, signature) = app
        .signed(&app.root, &format!("delete_webhook:{other}"))
        .await;
    let body = json!({ "actor": app.root.pubkey(), "nonce": nonce, "signature": signature });
    assert_eq!(
        app.delete(&format!("/api/webhooks/{id}"), &body).await,
        (401, error("bad signature"))
    );
    // A nonce is spent once.
    let (nonce, signature) = app.signed(&app.root, &format!("delete_webhook:{id}")).await;
    let body = json!({ "actor": app.root.pubkey(), "nonce": nonce, "signature": signature });
    assert_eq!(
        app.delete(&format!("/api/webhooks/{id}"), &body).await.0,
        200
    );
    assert_eq!(
        app.delete(&format!("/api/webhooks/{id}"), &body).await,
        (401, error("nonce invalid or expired"))
    );
}

#[actix_rt::test]
async fn a_redelivery_goes_after_those_queued_with_its_id_and_is_audited() {
    let app = private_app().await;
    let receiver = Receiver::start(vec![]);
    let (id, _) = created(&app, &receiver.url).await;
    let first = queue(&app, &id, "1.1", json!([])).await;
    let delivered = eventually(Duration::from_secs(10), async || {
        deliveries(&app, &id).await[0]["status"] == "delivered"
    })
    .await;
    assert!(delivered);
    let second = queue(&app, &id, "1.2", json!([])).await;
    let third = queue(&app, &id, "1.3", json!([])).await;
    let redeliver = async |delivery: &str| {
        let action = format!("redeliver_webhook:{id}:{delivery}");
        let (nonce, signature) = app.signed(&app.root, &action).await;
        app.post(
            &format!("/api/webhooks/{id}/redeliver"),
            &json!({ "actor": app.root.pubkey(), "nonce": nonce, "signature": signature,
                     "delivery_id": delivery }),
        )
        .await
    };
    assert_eq!(redeliver(&first).await, (202, json!({ "accepted": true })));
    let all_sent = eventually(Duration::from_secs(10), async || {
        receiver.received().len() == 4
    })
    .await;
    assert!(all_sent, "{:?}", receiver.received().len());
    let sent: Vec<String> = receiver
        .received()
        .iter()
        .map(|r| r.header("webhook-id").to_string())
        .collect();
    // The same id again, after the two queued before it.
    assert_eq!(sent, [&first, &second, &third, &first].map(String::clone));
    let last = deliveries(&app, &id).await;
    assert_eq!(last.len(), 3);
    assert_eq!(
        last[2]["delivery_id"],
        first.as_str(),
        "last in the order now"
    );
    assert_eq!(
        (&last[2]["status"], &last[2]["attempts"]),
        (&json!("delivered"), &json!(1))
    );
    // An unknown or malformed delivery.
    assert_eq!(
        redeliver(&format!("msg_{:032x}", 9)).await,
        (404, error("not found"))
    );
    assert_eq!(
        redeliver("msg_x").await,
        (400, json!({ "error": "invalid", "field": "delivery_id" }))
    );
    assert_eq!(
        audit(&app, "redeliver_webhook").await,
        vec![(app.root.pubkey(), id)]
    );
}

#[actix_rt::test]
async fn bad_creates_are_invalid_naming_the_field_and_store_nothing() {
    let app = spawn_app_with(|c| c.webhooks.max = 2).await;
    let invalid = |field: &str| (400, json!({ "error": "invalid", "field": field }));
    // Every refused class of address, and names that resolve to one.
    for url in [
        "http://127.0.0.1/hook",
        "http://localhost:8080/hook",
        "http://10.1.2.3/",
        "http://192.168.0.1/",
        "http://100.64.0.1/",
        "http://169.254.169.254/latest",
        "http://0.0.0.0/",
        "http://[::1]/",
        "http://[fc00::1]/",
        "http://[fe80::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://2130706433/",
    ] {
        assert_eq!(
            create(&app, &app.root, json!({ "url": url })).await,
            invalid("url"),
            "{url}"
        );
    }
    let long = format!("https://example.com/{}", "a".repeat(2048));
    for url in [
        "ftp://example.com/",
        "not a url",
        "https://user@example.com/",
        &long,
    ] {
        assert_eq!(
            create(&app, &app.root, json!({ "url": url })).await,
            invalid("url"),
            "{url}"
        );
    }
    let public = "https://93.184.215.14/hook";
    for below in ["0", "10000000000000000001", "1.5", "x"] {
        assert_eq!(
            create(
                &app,
                &app.root,
                json!({ "url": public, "below_wad": below })
            )
            .await,
            invalid("below_wad")
        );
    }
    let many: Vec<String> = (0..10_001).map(|_| Wallet::new().pubkey()).collect();
    assert_eq!(
        create(&app, &app.root, json!({ "url": public, "owners": many })).await,
        invalid("owners")
    );
    assert_eq!(stored(&app).await, 0);
    // 10,000 owners fit in one body.
    let (status, created) = create(
        &app,
        &app.root,
        json!({ "url": public, "owners": many[..10_000] }),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(created["owners"].as_array().unwrap().len(), 10_000);
    // Past webhooks.max.
    assert_eq!(
        create(&app, &app.root, json!({ "url": public })).await.0,
        201
    );
    assert_eq!(
        create(&app, &app.root, json!({ "url": public })).await,
        invalid("webhooks.max")
    );
    assert_eq!(stored(&app).await, 2);
    assert_eq!(audit(&app, "create_webhook").await.len(), 2);
}
