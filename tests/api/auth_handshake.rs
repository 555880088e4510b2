//! The nonce endpoint and each property of docs/design.md §5.3, with real ed25519 keys.

use serde_json::json;

use crate::common::*;

fn add_body(
    app: &TestApp,
    nonce: &str,
    signature: &str,
    pubkey: &str,
    role: &str,
) -> serde_json::Value {
    json!({ "actor": app.root.pubkey(), "nonce": nonce, "signature": signature, "pubkey": pubkey, "role": role })
}

#[actix_rt::test]
async fn nonce_endpoint_returns_nonce_message_and_expiry() {
    let app = spawn_app().await;
    let wallet = Wallet::new();
    let (status, body) = app
        .post(
            "/api/auth/nonce",
            &json!({ "pubkey": wallet.pubkey(), "action": "add_admin:x:pool_admin" }),
        )
        .await;
    assert_eq!(status, 200);
    let nonce = body["nonce"].as_str().unwrap();
    assert_eq!(nonce.len(), 32);
    assert!(nonce.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(
        body["message"],
        format!("Service admin auth\nAction: add_admin:x:pool_admin\nNonce: {nonce}")
    );
    let expires =
        chrono::DateTime::parse_from_rfc3339(body["expiresAt"].as_str().unwrap()).unwrap();
    let ttl = expires
        .signed_duration_since(chrono::Utc::now())
        .num_seconds();
    assert!(
        (295..=300).contains(&ttl),
        "nonce lifetime is 5 minutes, got {ttl}s"
    );
    // Stored for that wallet.
    let db = app.db.connect().await;
    let row = db
        .query_one("SELECT pubkey FROM auth_nonces WHERE nonce = $1", &[&nonce])
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), wallet.pubkey());
}

#[actix_rt::test]
async fn nonce_endpoint_errors() {
    let app = spawn_app().await;
    let pk = Wallet::new().pubkey();
    let required = error("pubkey and action required");
    assert_eq!(
        app.post("/api/auth/nonce", &json!({})).await,
        (400, required.clone())
    );
    assert_eq!(
        app.post("/api/auth/nonce", &json!({ "pubkey": pk })).await,
        (400, required.clone())
    );
    assert_eq!(
        app.post("/api/auth/nonce", &json!({ "action": "a" })).await,
        (400, required.clone())
    );
    assert_eq!(
        app.post("/api/auth/nonce", &json!({ "pubkey": "", "action": "a" }))
            .await,
        (400, required.clone())
    );
    assert_eq!(
        app.post("/api/auth/nonce", &json!({ "pubkey": pk, "action": null }))
            .await,
        (400, required)
    );
    let invalid_pubkey = error("invalid pubkey");
    for bad in ["abc", "0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl", &"1".repeat(60)] {
        assert_eq!(
            app.post("/api/auth/nonce", &json!({ "pubkey": bad, "action": "a" }))
                .await,
            (400, invalid_pubkey.clone())
        );
    }
    assert_eq!(
        app.post("/api/auth/nonce", &json!({ "pubkey": 5, "action": "a" }))
            .await,
        (400, invalid_pubkey)
    );
    // Nonce hygiene: an action with a line break could forge message lines.
    for bad in ["a\nNonce: 0", "tab\t", &"a".repeat(257)] {
        assert_eq!(
            app.post("/api/auth/nonce", &json!({ "pubkey": pk, "action": bad }))
                .await,
            (400, error("invalid"))
        );
    }
    assert_eq!(
        app.post_raw("/api/auth/nonce", "{nope").await,
        (400, error("bad json"))
    );
}

#[actix_rt::test]
async fn at_most_16_live_nonces_per_wallet_oldest_dropped() {
    let app = spawn_app().await;
    let wallet = Wallet::new();
    let mut nonces = Vec::new();
    for i in 0..20 {
        let (_, body) = app
            .post(
                "/api/auth/nonce",
                &json!({ "pubkey": wallet.pubkey(), "action": format!("a{i}") }),
            )
            .await;
        nonces.push(body["nonce"].as_str().unwrap().to_string());
    }
    let db = app.db.connect().await;
    let live: Vec<String> = db
        .query(
            "SELECT nonce FROM auth_nonces WHERE pubkey = $1",
            &[&wallet.pubkey()],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(live.len(), 16);
    for old in &nonces[..4] {
        assert!(!live.contains(old), "oldest nonces are dropped");
    }
    for new in &nonces[4..] {
        assert!(live.contains(new));
    }
}

/// 5.3: the signature is over the exact canonical message bytes.
#[actix_rt::test]
async fn signature_over_other_bytes_is_bad_signature() {
    let app = spawn_app().await;
    let target = Wallet::new().pubkey();
    let action = format!("add_admin:{target}:pool_admin");
    let (_, body) = app
        .post(
            "/api/auth/nonce",
            &json!({ "pubkey": app.root.pubkey(), "action": action }),
        )
        .await;
    let nonce = body["nonce"].as_str().unwrap();
    // Same content, different bytes: CRLF line ends, a trailing newline, another header.
    for message in [
        format!("Service admin auth\r\nAction: {action}\r\nNonce: {nonce}"),
        format!("Service admin auth\nAction: {action}\nNonce: {nonce}\n"),
        format!("Lendex admin auth\nAction: {action}\nNonce: {nonce}"),
        format!("{action}:{nonce}"),
    ] {
        let signature = app.root.sign(&message);
        let res = app
            .post(
                "/api/admin/allowlist",
                &add_body(&app, nonce, &signature, &target, "pool_admin"),
            )
            .await;
        assert_eq!(res, (401, error("bad signature")));
    }
    // Garbage signatures too.
    for signature in ["notbase58!", "3yZe7d", &"1".repeat(88)] {
        let res = app
            .post(
                "/api/admin/allowlist",
                &add_body(&app, nonce, signature, &target, "pool_admin"),
            )
            .await;
        assert_eq!(res, (401, error("bad signature")));
    }
    // A bad signature does not spend the nonce: the right one still works.
    let good = app.root.sign(&format!(
        "Service admin auth\nAction: {action}\nNonce: {nonce}"
    ));
    let res = app
        .post(
            "/api/admin/allowlist",
            &add_body(&app, nonce, &good, &target, "pool_admin"),
        )
        .await;
    assert_eq!(res, (200, json!({ "ok": true })));
}

/// 5.3: the nonce is single-use.
#[actix_rt::test]
async fn replayed_nonce_is_refused() {
    let app = spawn_app().await;
    let target = Wallet::new().pubkey();
    let action = format!("add_admin:{target}:pool_admin");
    let (nonce, signature) = app.signed(&app.root, &action).await;
    let body = add_body(&app, &nonce, &signature, &target, "pool_admin");
    assert_eq!(
        app.post("/api/admin/allowlist", &body).await,
        (200, json!({ "ok": true }))
    );
    assert_eq!(
        app.post("/api/admin/allowlist", &body).await,
        (401, error("nonce invalid or expired"))
    );
    // A nonce that was never issued.
    let fake = add_body(
        &app,
        "0123456789abcdef0123456789abcdef",
        &app.root.sign(&format!(
            "Service admin auth\nAction: {action}\nNonce: 0123456789abcdef0123456789abcdef"
        )),
        &target,
        "pool_admin",
    );
    assert_eq!(
        app.post("/api/admin/allowlist", &fake).await,
        (401, error("nonce invalid or expired"))
    );
}

/// 5.3: the nonce expires 5 minutes after issue (moved into the past, not slept).
#[actix_rt::test]
async fn expired_nonce_is_refused() {
    let app = spawn_app().await;
    let target = Wallet::new().pubkey();
    let action = format!("add_admin:{target}:pool_admin");
    let (nonce, signature) = app.signed(&app.root, &action).await;
    let db = app.db.connect().await;
    // As if issued 5 minutes and 1 second ago.
    let moved = db
        .execute(
            "UPDATE auth_nonces SET expires_at = now() - interval '1 second' WHERE nonce = $1",
            &[&nonce],
        )
        .await
        .unwrap();
    assert_eq!(moved, 1);
    let res = app
        .post(
            "/api/admin/allowlist",
            &add_body(&app, &nonce, &signature, &target, "pool_admin"),
        )
        .await;
    assert_eq!(res, (401, error("nonce invalid or expired")));
    // And the purge removes expired rows.
    let purged = db
        .execute(
            "DELETE FROM auth_nonces WHERE expires_at <= clock_timestamp()",
            &[],
        )
        .await
        .unwrap();
    assert!(purged <= 1);
}

/// A short configured lifetime expires on its own (the same rule, without editing rows).
#[actix_rt::test]
async fn nonce_with_short_lifetime_expires() {
    let app = spawn_app_with(|c| c.auth.nonce_ttl_seconds = 1).await;
    let target = Wallet::new().pubkey();
    let action = format!("add_admin:{target}:pool_admin");
    let (nonce, signature) = app.signed(&app.root, &action).await;
    tokio::time::sleep(std::time::Duration::from_millis(1300)).await;
    let res = app
        .post(
            "/api/admin/allowlist",
            &add_body(&app, &nonce, &signature, &target, "pool_admin"),
        )
        .await;
    assert_eq!(res, (401, error("nonce invalid or expired")));
}

/// 5.3: a nonce issued to wallet A cannot be used by wallet B.
#[actix_rt::test]
async fn nonce_of_wallet_a_cannot_be_used_by_wallet_b() {
    let app = spawn_app().await;
    let other_super = Wallet::new();
    app.add_admin(&other_super, "super_admin").await;
    let target = Wallet::new().pubkey();
    let action = format!("add_admin:{target}:pool_admin");
    // Issued to root; B signs the right message with root's nonce.
    let (nonce, _) = app.signed(&app.root, &action).await;
    let signature = other_super.sign(&format!(
        "Service admin auth\nAction: {action}\nNonce: {nonce}"
    ));
    let body = json!({ "actor": other_super.pubkey(), "nonce": nonce, "signature": signature,
                       "pubkey": target, "role": "pool_admin" });
    assert_eq!(
        app.post("/api/admin/allowlist", &body).await,
        (401, error("nonce invalid or expired"))
    );
    // B claiming to be A: the signature does not verify under A's key.
    let body = json!({ "actor": app.root.pubkey(), "nonce": nonce, "signature": signature,
                       "pubkey": target, "role": "pool_admin" });
    assert_eq!(
        app.post("/api/admin/allowlist", &body).await,
        (401, error("bad signature"))
    );
}

/// 5.3: the action is inside the signed message.
#[actix_rt::test]
async fn add_admin_signature_cannot_be_replayed_as_revoke() {
    let app = spawn_app().await;
    let target = Wallet::new();
    app.add_admin(&target, "pool_admin").await;
    let (nonce, signature) = app
        .signed(
            &app.root,
            &format!("add_admin:{}:pool_admin", target.pubkey()),
        )
        .await;
    let revoke = json!({ "actor": app.root.pubkey(), "nonce": nonce, "signature": signature, "pubkey": target.pubkey() });
    assert_eq!(
        app.delete("/api/admin/allowlist", &revoke).await,
        (401, error("bad signature"))
    );
    // Nor as an add with another role.
    let add = add_body(&app, &nonce, &signature, &target.pubkey(), "super_admin");
    assert_eq!(
        app.post("/api/admin/allowlist", &add).await,
        (401, error("bad signature"))
    );
    // A nonce issued for one action is not spent by a correctly signed other action.
    let other = format!("revoke_admin:{}", target.pubkey());
    let sig = app.root.sign(&format!(
        "Service admin auth\nAction: {other}\nNonce: {nonce}"
    ));
    let revoke = json!({ "actor": app.root.pubkey(), "nonce": nonce, "signature": sig, "pubkey": target.pubkey() });
    assert_eq!(
        app.delete("/api/admin/allowlist", &revoke).await,
        (401, error("nonce invalid or expired"))
    );
    assert_eq!(
        app.get(&format!("/api/admin/me?pubkey={}", target.pubkey()))
            .await,
        (200, json!({ "role": "pool_admin" }))
    );
}

/// 5.3: the allowlist is re-checked on every request.
#[actix_rt::test]
async fn revoked_admin_is_refused_on_next_call() {
    let app = spawn_app().await;
    let second = Wallet::new();
    app.add_admin(&second, "super_admin").await;
    // `second` can act...
    let t1 = Wallet::new().pubkey();
    let (nonce, sig) = app
        .signed(&second, &format!("add_admin:{t1}:pool_admin"))
        .await;
    let body = json!({ "actor": second.pubkey(), "nonce": nonce, "signature": sig, "pubkey": t1, "role": "pool_admin" });
    assert_eq!(
        app.post("/api/admin/allowlist", &body).await,
        (200, json!({ "ok": true }))
    );
    // ...gets a nonce for its next call, then is revoked before using it.
    let t2 = Wallet::new().pubkey();
    let (nonce2, sig2) = app
        .signed(&second, &format!("add_admin:{t2}:pool_admin"))
        .await;
    let (rn, rs) = app
        .signed(&app.root, &format!("revoke_admin:{}", second.pubkey()))
        .await;
    let revoke = json!({ "actor": app.root.pubkey(), "nonce": rn, "signature": rs, "pubkey": second.pubkey() });
    assert_eq!(
        app.delete("/api/admin/allowlist", &revoke).await,
        (200, json!({ "ok": true }))
    );
    let body = json!({ "actor": second.pubkey(), "nonce": nonce2, "signature": sig2, "pubkey": t2, "role": "pool_admin" });
    assert_eq!(
        app.post("/api/admin/allowlist", &body).await,
        (401, error("not authorized"))
    );
}

/// 5.3 and the state table: 20 concurrent uses of one nonce, exactly one succeeds.
#[actix_rt::test]
async fn concurrent_double_use_of_one_nonce_succeeds_once() {
    let app = spawn_app().await;
    let target = Wallet::new().pubkey();
    let action = format!("add_admin:{target}:pool_admin");
    let (nonce, signature) = app.signed(&app.root, &action).await;
    let body = add_body(&app, &nonce, &signature, &target, "pool_admin");
    let attempts = (0..20).map(|_| app.post("/api/admin/allowlist", &body));
    let results = futures_util::future::join_all(attempts).await;
    let ok = results.iter().filter(|r| r.0 == 200).count();
    let replay = results
        .iter()
        .filter(|r| **r == (401, error("nonce invalid or expired")))
        .count();
    assert_eq!((ok, replay), (1, 19), "{results:?}");
    let db = app.db.connect().await;
    let audits: i64 = db
        .query_one(
            "SELECT count(*) FROM audit_log WHERE action = 'add_admin' AND target = $1",
            &[&target],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(audits, 1);
}

/// Roles: a pool_admin is refused where super_admin is required; a stranger is not authorized.
#[actix_rt::test]
async fn role_checks() {
    let app = spawn_app().await;
    let pool_admin = Wallet::new();
    app.add_admin(&pool_admin, "pool_admin").await;
    let target = Wallet::new().pubkey();
    let (nonce, sig) = app
        .signed(&pool_admin, &format!("add_admin:{target}:pool_admin"))
        .await;
    let body = json!({ "actor": pool_admin.pubkey(), "nonce": nonce, "signature": sig, "pubkey": target, "role": "pool_admin" });
    assert_eq!(
        app.post("/api/admin/allowlist", &body).await,
        (401, error("super_admin required"))
    );

    let stranger = Wallet::new();
    let (nonce, sig) = app
        .signed(&stranger, &format!("revoke_admin:{}", pool_admin.pubkey()))
        .await;
    let body = json!({ "actor": stranger.pubkey(), "nonce": nonce, "signature": sig, "pubkey": pool_admin.pubkey() });
    assert_eq!(
        app.delete("/api/admin/allowlist", &body).await,
        (401, error("not authorized"))
    );
}
