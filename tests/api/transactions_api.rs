//! The transaction log (docs/design.md §4.14, 4.15).

use serde_json::json;

use crate::common::*;

fn tx(signature: &str, wallet: &str, action: &str) -> serde_json::Value {
    json!({ "signature": signature, "wallet": wallet, "action": action })
}

#[actix_rt::test]
async fn record_then_list_newest_first_with_filters() {
    let app = spawn_app().await;
    let (w1, w2) = (Wallet::new().pubkey(), Wallet::new().pubkey());
    let (p1, p2) = (Wallet::new().pubkey(), Wallet::new().pubkey());
    let mut ids = Vec::new();
    for (i, (w, p)) in [(&w1, &p1), (&w1, &p2), (&w2, &p1)].into_iter().enumerate() {
        let body = json!({ "signature": format!("sig{i}"), "wallet": w, "action": "deposit", "pool_address": p,
                           "amount": "18446744073709551615", "status": "pending", "error_msg": null });
        let (status, res) = app.post("/api/transactions", &body).await;
        assert_eq!(status, 200, "{res}");
        assert_eq!(res["ok"], true);
        ids.push(res["id"].as_i64().unwrap());
    }
    let (status, body) = app.get("/api/transactions").await;
    assert_eq!(status, 200);
    let list = body["transactions"].as_array().unwrap();
    assert_eq!(
        list.iter()
            .map(|t| t["id"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        vec![ids[2], ids[1], ids[0]]
    );
    let first = &list[2];
    assert_eq!(first["signature"], "sig0");
    assert_eq!(first["wallet"], w1);
    assert_eq!(first["pool_address"], p1);
    assert_eq!(first["action"], "deposit");
    assert_eq!(
        first["amount"], "18446744073709551615",
        "u64 max survives as a string"
    );
    assert_eq!(first["status"], "pending");
    assert!(first["error_msg"].is_null());
    assert!(chrono::DateTime::parse_from_rfc3339(first["created_at"].as_str().unwrap()).is_ok());

    let n = |b: serde_json::Value| b["transactions"].as_array().unwrap().len();
    assert_eq!(
        n(app.get(&format!("/api/transactions?wallet={w1}")).await.1),
        2
    );
    assert_eq!(
        n(app.get(&format!("/api/transactions?pool={p1}")).await.1),
        2
    );
    assert_eq!(
        n(app
            .get(&format!("/api/transactions?wallet={w1}&pool={p1}"))
            .await
            .1),
        1
    );
    assert_eq!(n(app.get("/api/transactions?limit=1").await.1), 1);
    assert_eq!(
        app.get("/api/transactions?wallet=bad").await,
        (400, error("invalid"))
    );
}

#[actix_rt::test]
async fn same_signature_updates_status_and_error_only() {
    let app = spawn_app().await;
    let w = Wallet::new().pubkey();
    let mut body = json!({ "signature": "s1", "wallet": w, "action": "borrow", "amount": "10", "status": "pending" });
    let (_, first) = app.post("/api/transactions", &body).await;
    body["status"] = json!("failed");
    body["error_msg"] = json!("custom program error: 0x1775");
    body["amount"] = json!("999");
    let (status, second) = app.post("/api/transactions", &body).await;
    assert_eq!(status, 200);
    assert_eq!(first["id"], second["id"], "same row");
    let (_, list) = app.get("/api/transactions").await;
    let rows = list["transactions"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["status"], "failed");
    assert_eq!(rows[0]["error_msg"], "custom program error: 0x1775");
    assert_eq!(rows[0]["amount"], "10");
}

#[actix_rt::test]
async fn status_defaults_to_confirmed_and_optionals_may_be_absent() {
    let app = spawn_app().await;
    let (status, _) = app
        .post(
            "/api/transactions",
            &tx("s2", &Wallet::new().pubkey(), "repay"),
        )
        .await;
    assert_eq!(status, 200);
    let (_, list) = app.get("/api/transactions").await;
    let row = &list["transactions"][0];
    assert_eq!(row["status"], "confirmed");
    assert!(row["amount"].is_null() && row["pool_address"].is_null());
}

#[actix_rt::test]
async fn record_errors() {
    let app = spawn_app().await;
    let w = Wallet::new().pubkey();
    let required = error("signature, wallet, action required");
    for field in ["signature", "wallet", "action"] {
        let mut body = tx("s", &w, "deposit");
        body.as_object_mut().unwrap().remove(field);
        assert_eq!(
            app.post("/api/transactions", &body).await,
            (400, required.clone()),
            "without {field}"
        );
        body[field] = json!("");
        assert_eq!(
            app.post("/api/transactions", &body).await,
            (400, required.clone()),
            "empty {field}"
        );
    }
    let invalid = error("invalid");
    let cases = [
        json!({ "signature": "s", "wallet": w, "action": "steal" }),
        json!({ "signature": "s", "wallet": "nope", "action": "deposit" }),
        json!({ "signature": "s", "wallet": w, "action": "deposit", "status": "done" }),
        json!({ "signature": "s", "wallet": w, "action": "deposit", "amount": "-1" }),
        json!({ "signature": "s", "wallet": w, "action": "deposit", "amount": "1.5" }),
        json!({ "signature": "s", "wallet": w, "action": "deposit", "amount": "18446744073709551616" }),
        json!({ "signature": "s", "wallet": w, "action": "deposit", "amount": 5 }),
        json!({ "signature": "s", "wallet": w, "action": "deposit", "pool_address": "xyz" }),
        json!({ "signature": 12, "wallet": w, "action": "deposit" }),
        json!({ "signature": "has space", "wallet": w, "action": "deposit" }),
    ];
    for body in cases {
        assert_eq!(
            app.post("/api/transactions", &body).await,
            (400, invalid.clone()),
            "{body}"
        );
    }
    assert_eq!(
        app.post_raw("/api/transactions", "not json").await,
        (400, error("bad json"))
    );
    assert_eq!(
        app.post_raw("/api/transactions", "\"a string\"").await,
        (400, error("bad json"))
    );
    let (_, list) = app.get("/api/transactions").await;
    assert_eq!(
        list["transactions"].as_array().unwrap().len(),
        0,
        "no bad input was written"
    );
}

#[actix_rt::test]
async fn every_acknowledged_write_is_in_the_database() {
    let app = spawn_app().await;
    let db = app.db.connect().await;
    let w = Wallet::new().pubkey();
    // Concurrent writes exercise group commit; each 2xx must already be visible.
    let posts = (0..200).map(|i| {
        let body = tx(&format!("burst{i}"), &w, "deposit");
        let app = &app;
        let db = &db;
        async move {
            let (status, res) = app.post("/api/transactions", &body).await;
            assert_eq!(status, 200);
            let row = db
                .query_opt(
                    "SELECT id FROM tx_log WHERE signature = $1",
                    &[&format!("burst{i}")],
                )
                .await
                .unwrap()
                .expect("acknowledged write is committed");
            assert_eq!(row.get::<_, i64>(0), res["id"].as_i64().unwrap());
        }
    });
    futures_util::future::join_all(posts).await;
}

#[actix_rt::test]
async fn transactions_are_kept_per_cluster() {
    let app = spawn_app().await;
    let db = app.db.connect().await;
    db.execute(
        "INSERT INTO tx_log (cluster, signature, wallet, action, status) VALUES ('devnet', 'other', 'w', 'deposit', 'confirmed')",
        &[],
    )
    .await
    .unwrap();
    let (_, list) = app.get("/api/transactions").await;
    assert_eq!(list["transactions"].as_array().unwrap().len(), 0);
    let (_, health) = app.get("/api/health").await;
    assert_eq!(health["checks"]["counts"]["tx_log"], 0);
}
