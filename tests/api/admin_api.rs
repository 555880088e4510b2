//! The allowlist, /admin/me and the audit log (docs/design.md §4.2 to 4.6).

use serde_json::json;

use crate::common::*;

#[actix_rt::test]
async fn bootstrap_super_admin_is_listed_with_label_and_system_marker() {
    let app = spawn_app().await;
    let (status, body) = app.get("/api/admin/allowlist").await;
    assert_eq!(status, 200);
    let admins = body["admins"].as_array().unwrap();
    assert_eq!(admins.len(), 1);
    let root = &admins[0];
    assert_eq!(root["pubkey"], app.root.pubkey());
    assert_eq!(root["role"], "super_admin");
    assert_eq!(root["label"], "bootstrap");
    assert_eq!(root["added_by"], "system");
    assert!(root["revoked_at"].is_null());
    assert!(chrono::DateTime::parse_from_rfc3339(root["created_at"].as_str().unwrap()).is_ok());
    assert_eq!(
        app.get(&format!("/api/admin/me?pubkey={}", app.root.pubkey()))
            .await,
        (200, json!({ "role": "super_admin" }))
    );
}

#[actix_rt::test]
async fn rerunning_bootstrap_with_new_key_adds_it() {
    let app = spawn_app().await;
    let new_root = Wallet::new();
    let mut config = app.config.clone();
    config.auth.super_admin_pubkey = new_root.pubkey();
    lendex::operator::migrate(&config).await.unwrap();
    lendex::operator::migrate(&config).await.unwrap(); // idempotent
    let (_, body) = app.get("/api/admin/allowlist").await;
    let keys: Vec<_> = body["admins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["pubkey"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(keys, vec![app.root.pubkey(), new_root.pubkey()]);
    let db = app.db.connect().await;
    let n: i64 = db
        .query_one(
            "SELECT count(*) FROM audit_log WHERE actor = 'system' AND target = $1",
            &[&new_root.pubkey()],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 1, "bootstrap is audited once, not on every rerun");
}

#[actix_rt::test]
async fn me_reports_roles_and_null() {
    let app = spawn_app().await;
    let pa = Wallet::new();
    app.add_admin(&pa, "pool_admin").await;
    assert_eq!(
        app.get(&format!("/api/admin/me?pubkey={}", pa.pubkey()))
            .await,
        (200, json!({ "role": "pool_admin" }))
    );
    assert_eq!(
        app.get(&format!("/api/admin/me?pubkey={}", Wallet::new().pubkey()))
            .await,
        (200, json!({ "role": null }))
    );
    assert_eq!(
        app.get("/api/admin/me").await,
        (400, error("missing fields"))
    );
    assert_eq!(
        app.get("/api/admin/me?pubkey=nope").await,
        (400, error("invalid"))
    );
}

#[actix_rt::test]
async fn add_admin_errors() {
    let app = spawn_app().await;
    let target = Wallet::new().pubkey();
    let full = json!({ "actor": app.root.pubkey(), "nonce": "0".repeat(32), "signature": "x", "pubkey": target, "role": "pool_admin" });
    for field in ["actor", "nonce", "signature", "pubkey"] {
        let mut body = full.clone();
        body.as_object_mut().unwrap().remove(field);
        assert_eq!(
            app.post("/api/admin/allowlist", &body).await,
            (400, error("missing fields")),
            "without {field}"
        );
        body[field] = json!("");
        assert_eq!(
            app.post("/api/admin/allowlist", &body).await,
            (400, error("missing fields")),
            "empty {field}"
        );
    }
    for role in [json!("admin"), json!(""), json!(null), json!(3)] {
        let mut body = full.clone();
        body["role"] = role;
        assert_eq!(
            app.post("/api/admin/allowlist", &body).await,
            (400, error("invalid role"))
        );
    }
    let mut body = full.clone();
    body.as_object_mut().unwrap().remove("role");
    assert_eq!(
        app.post("/api/admin/allowlist", &body).await,
        (400, error("invalid role"))
    );
    let mut body = full.clone();
    body["pubkey"] = json!("not-a-pubkey");
    assert_eq!(
        app.post("/api/admin/allowlist", &body).await,
        (400, error("invalid"))
    );
    let mut body = full.clone();
    body["label"] = json!(12);
    assert_eq!(
        app.post("/api/admin/allowlist", &body).await,
        (400, error("invalid"))
    );
    assert_eq!(
        app.post_raw("/api/admin/allowlist", "[1,2]").await,
        (400, error("bad json"))
    );
    // Nothing was written by any of these.
    let (_, list) = app.get("/api/admin/allowlist").await;
    assert_eq!(list["admins"].as_array().unwrap().len(), 1);
}

#[actix_rt::test]
async fn add_with_label_then_readd_updates_and_reactivates() {
    let app = spawn_app().await;
    let w = Wallet::new();
    let (nonce, sig) = app
        .signed(&app.root, &format!("add_admin:{}:pool_admin", w.pubkey()))
        .await;
    let body = json!({ "actor": app.root.pubkey(), "nonce": nonce, "signature": sig, "pubkey": w.pubkey(),
                       "role": "pool_admin", "label": "ops desk" });
    assert_eq!(
        app.post("/api/admin/allowlist", &body).await,
        (200, json!({ "ok": true }))
    );
    let (_, list) = app.get("/api/admin/allowlist").await;
    let entry = list["admins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["pubkey"] == w.pubkey())
        .unwrap()
        .clone();
    assert_eq!(entry["label"], "ops desk");
    assert_eq!(entry["added_by"], app.root.pubkey());

    // Revoke, then add again as super_admin: the row is re-activated with the new role.
    let (rn, rs) = app
        .signed(&app.root, &format!("revoke_admin:{}", w.pubkey()))
        .await;
    let revoke =
        json!({ "actor": app.root.pubkey(), "nonce": rn, "signature": rs, "pubkey": w.pubkey() });
    assert_eq!(
        app.delete("/api/admin/allowlist", &revoke).await,
        (200, json!({ "ok": true }))
    );
    let (_, list) = app.get("/api/admin/allowlist").await;
    assert!(
        list["admins"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["pubkey"] != w.pubkey()),
        "revoked admins are not listed"
    );
    let db = app.db.connect().await;
    let revoked: Option<chrono::DateTime<chrono::Utc>> = db
        .query_one(
            "SELECT revoked_at FROM pool_admins WHERE pubkey = $1",
            &[&w.pubkey()],
        )
        .await
        .unwrap()
        .get(0);
    assert!(revoked.is_some(), "soft revoke keeps the row");

    app.add_admin(&w, "super_admin").await;
    assert_eq!(
        app.get(&format!("/api/admin/me?pubkey={}", w.pubkey()))
            .await,
        (200, json!({ "role": "super_admin" }))
    );
}

#[actix_rt::test]
async fn revoke_errors() {
    let app = spawn_app().await;
    // Cannot revoke yourself (checked before anything is spent).
    let body = json!({ "actor": app.root.pubkey(), "nonce": "0".repeat(32), "signature": "x", "pubkey": app.root.pubkey() });
    assert_eq!(
        app.delete("/api/admin/allowlist", &body).await,
        (400, error("cannot revoke yourself"))
    );
    assert_eq!(
        app.delete(
            "/api/admin/allowlist",
            &json!({ "actor": app.root.pubkey() })
        )
        .await,
        (400, error("missing fields"))
    );
    // Revoking a wallet with no active entry: 404, and the nonce is spent.
    let stranger = Wallet::new().pubkey();
    let (nonce, sig) = app
        .signed(&app.root, &format!("revoke_admin:{stranger}"))
        .await;
    let body =
        json!({ "actor": app.root.pubkey(), "nonce": nonce, "signature": sig, "pubkey": stranger });
    assert_eq!(
        app.delete("/api/admin/allowlist", &body).await,
        (404, error("not found"))
    );
    assert_eq!(
        app.delete("/api/admin/allowlist", &body).await,
        (401, error("nonce invalid or expired"))
    );
}

#[actix_rt::test]
async fn audit_log_records_admin_changes_with_filters_and_limit() {
    let app = spawn_app().await;
    let a = Wallet::new();
    let b = Wallet::new();
    app.add_admin(&a, "pool_admin").await;
    app.add_admin(&b, "super_admin").await;
    let (rn, rs) = app
        .signed(&app.root, &format!("revoke_admin:{}", a.pubkey()))
        .await;
    let revoke =
        json!({ "actor": app.root.pubkey(), "nonce": rn, "signature": rs, "pubkey": a.pubkey() });
    assert_eq!(app.delete("/api/admin/allowlist", &revoke).await.0, 200);

    let (status, body) = app.get("/api/admin/audit").await;
    assert_eq!(status, 200);
    let entries = body["entries"].as_array().unwrap();
    // Newest first: revoke, add b, add a, bootstrap.
    let actions: Vec<_> = entries
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        vec!["revoke_admin", "add_admin", "add_admin", "add_admin"]
    );
    assert_eq!(entries[0]["actor"], app.root.pubkey());
    assert_eq!(entries[0]["target"], a.pubkey());
    assert!(entries[0]["details"].is_object());
    assert_eq!(entries[1]["details"]["role"], "super_admin");
    assert_eq!(entries[3]["actor"], "system");

    let (_, body) = app.get("/api/admin/audit?action=add_admin").await;
    assert_eq!(body["entries"].as_array().unwrap().len(), 3);
    let (_, body) = app
        .get(&format!("/api/admin/audit?actor={}", app.root.pubkey()))
        .await;
    assert_eq!(body["entries"].as_array().unwrap().len(), 3);
    let (_, body) = app
        .get(&format!(
            "/api/admin/audit?actor={}&action=revoke_admin",
            app.root.pubkey()
        ))
        .await;
    assert_eq!(body["entries"].as_array().unwrap().len(), 1);
    let (_, body) = app.get("/api/admin/audit?actor=system").await;
    assert_eq!(body["entries"].as_array().unwrap().len(), 1);
    for (q, n) in [
        ("limit=2", 2),
        ("limit=0", 4),
        ("limit=abc", 4),
        ("limit=-1", 4),
        ("limit=100000", 4),
    ] {
        let (_, body) = app.get(&format!("/api/admin/audit?{q}")).await;
        assert_eq!(body["entries"].as_array().unwrap().len(), n, "{q}");
    }
}

#[actix_rt::test]
async fn audit_limit_default_50_max_200() {
    let app = spawn_app().await;
    let db = app.db.connect().await;
    db.execute(
        "INSERT INTO audit_log (actor, action, target) SELECT 'system', 'pause', 'p' || g FROM generate_series(1, 250) g",
        &[],
    )
    .await
    .unwrap();
    let count = |body: serde_json::Value| body["entries"].as_array().unwrap().len();
    assert_eq!(count(app.get("/api/admin/audit").await.1), 50);
    assert_eq!(count(app.get("/api/admin/audit?limit=200").await.1), 200);
    assert_eq!(count(app.get("/api/admin/audit?limit=201").await.1), 200);
}

#[actix_rt::test]
async fn mainnet_audit_requires_signed_read_audit_in_headers() {
    let app = spawn_app_with(|c| c.chain.cluster = lendex::config::Cluster::Mainnet).await;
    assert_eq!(app.get("/api/admin/audit").await, (403, error("forbidden")));

    let get_with = |actor: String, nonce: String, sig: String| {
        let req = app
            .http
            .get(app.url("/api/admin/audit?limit=5"))
            .header("x-actor", actor)
            .header("x-nonce", nonce)
            .header("x-signature", sig);
        async move { decode(req.send().await.unwrap()).await }
    };
    // Properly signed by an admin: allowed, once.
    let (nonce, sig) = app.signed(&app.root, "read_audit").await;
    let (status, body) = get_with(app.root.pubkey(), nonce.clone(), sig.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["entries"].is_array());
    assert_eq!(
        get_with(app.root.pubkey(), nonce, sig).await,
        (403, error("forbidden")),
        "replay"
    );
    // Signed for another action.
    let (nonce, sig) = app.signed(&app.root, "read_audit2").await;
    assert_eq!(
        get_with(app.root.pubkey(), nonce, sig).await,
        (403, error("forbidden"))
    );
    // Correctly signed by a non-admin.
    let stranger = Wallet::new();
    let (nonce, sig) = app.signed(&stranger, "read_audit").await;
    assert_eq!(
        get_with(stranger.pubkey(), nonce, sig).await,
        (403, error("forbidden"))
    );
    // Bad signature.
    let (nonce, _) = app.signed(&app.root, "read_audit").await;
    assert_eq!(
        get_with(app.root.pubkey(), nonce, "1111".into()).await,
        (403, error("forbidden"))
    );
}
