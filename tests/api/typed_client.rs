//! The typed client (`lendex-client`) against a real service, as a bot uses
//! it: every public route answers in its wire type with nothing lost (the
//! typed answer, serialized again, is the raw JSON), a long poll is answered
//! by a change and a quiet one by 304, the feed resumes after a cut with no
//! event lost or repeated and surfaces a `reset`, and signed admin calls pass
//! while a stranger's are refused with the spec's error.

use std::time::Duration;

use lendex::domain::enums::Role;
use lendex::domain::pubkey::Pubkey;
use lendex_client::routes::path;
use lendex_client::wire::positions::UnhealthyResponse;
use lendex_client::{Client, Error, Polled, Query};
use lendex_testkit::proxy::TcpProxy;
use serde::Serialize;

use crate::common::*;
use crate::fixtures::market::market;

/// The typed answer, serialized again, equals the raw JSON of the same
/// route (read again while the answer moves under it, as prices age).
async fn lossless<T: Serialize>(app: &TestApp, path: &str, typed: impl AsyncFn() -> T) {
    let mut last = String::new();
    let same = eventually(Duration::from_secs(5), async || {
        let typed = serde_json::to_value(typed().await).unwrap();
        let (status, raw) = app.get(path).await;
        last = format!("{path}: {status}\ntyped {typed}\nraw   {raw}");
        status == 200 && typed == raw
    })
    .await;
    assert!(same, "{last}");
}

#[actix_rt::test]
async fn every_public_route_answers_in_its_wire_type() {
    let m = market(|_| {}).await;
    let app = &m.t.app;
    let owner: Pubkey = m
        .account(500_000_000, 40_000_000_000)
        .await
        .parse()
        .unwrap();
    let lendex = Client::new(&app.base);
    let (usdc, q) = (m.usdc, Query::new());
    // History's ranges default to now: named, so both reads ask the same.
    let now = chrono::Utc::now();
    let (from, to) = (
        (now - chrono::Duration::hours(1)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        (now + chrono::Duration::hours(1)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    );
    let range = Query::new().with("from", &from).with("to", &to);
    let in_range = range.encode();

    assert!(lendex.health().await.unwrap().checks.database.ok);
    lossless(app, "/api/pools", async || lendex.pools().await.unwrap()).await;
    lossless(app, "/api/pools/status", async || {
        lendex.pool_status().await.unwrap()
    })
    .await;
    lossless(app, &format!("/api/pools/{usdc}/chain"), async || {
        lendex.pool_on_chain(&usdc).await.unwrap()
    })
    .await;
    lossless(app, &format!("/api/positions/{owner}"), async || {
        lendex.positions(&owner).await.unwrap()
    })
    .await;
    lossless(app, &format!("/api/positions/{owner}/detail"), async || {
        lendex.detail(&owner).await.unwrap()
    })
    .await;
    for address in [owner, usdc] {
        lossless(app, &format!("/api/addresses/{address}"), async || {
            lendex.address(&address).await.unwrap()
        })
        .await;
    }
    lossless(app, "/api/positions/unhealthy", async || {
        lendex.unhealthy(&q).await.unwrap()
    })
    .await;
    let some = Query::new().with("limit", 5);
    lossless(app, "/api/liquidations?limit=5", async || {
        lendex.liquidations(&some).await.unwrap()
    })
    .await;
    lossless(app, "/api/positions/at-risk", async || {
        lendex.at_risk(&q).await.unwrap()
    })
    .await;
    let shock = Query::new().with("shock", format!("{}:-2000", m.sol));
    lossless(
        app,
        &format!("/api/risk/shock?shock={}%3A-2000", m.sol),
        async || lendex.risk_shock(&shock).await.unwrap(),
    )
    .await;
    let curve = Query::new()
        .with("pool", m.sol)
        .with("from_bps", -5000)
        .with("to_bps", 5000)
        .with("steps", 10);
    let curve_path = format!(
        "/api/risk/curve?pool={}&from_bps=-5000&to_bps=5000&steps=10",
        m.sol
    );
    lossless(app, &curve_path, async || {
        lendex.risk_curve(&curve).await.unwrap()
    })
    .await;
    lossless(app, "/api/transactions", async || {
        lendex.transactions(&q).await.unwrap()
    })
    .await;
    lossless(app, "/api/admin/allowlist", async || {
        lendex.allowlist().await.unwrap()
    })
    .await;
    lossless(app, "/api/admin/audit", async || {
        lendex.audit(None, &q).await.unwrap()
    })
    .await;
    let root: Pubkey = app.root.pubkey().parse().unwrap();
    lossless(app, &format!("/api/admin/me?pubkey={root}"), async || {
        lendex.me(&root).await.unwrap()
    })
    .await;
    lossless(
        app,
        &format!("/api/positions/{owner}/history{in_range}"),
        async || lendex.owner_history(&owner, &range).await.unwrap(),
    )
    .await;
    lossless(app, &format!("/api/history/events{in_range}"), async || {
        lendex.history_events(&range).await.unwrap()
    })
    .await;
    lossless(app, &format!("/api/history/market{in_range}"), async || {
        lendex.history_market(&range).await.unwrap()
    })
    .await;
    lossless(
        app,
        &format!("/api/pools/{usdc}/prices{in_range}"),
        async || lendex.pool_prices(&usdc, &range).await.unwrap(),
    )
    .await;

    // Writes answer typed too, and refusals carry the spec's error.
    let synced = lendex.sync_position(&m.usdc, &owner).await.unwrap();
    assert!(synced.ok && synced.exists);
    assert!(lendex.sync_pool(&m.sol).await.unwrap().ok);
    let stranger = Pubkey::new_unique();
    assert_eq!(
        lendex.pool_on_chain(&stranger).await.unwrap_err(),
        Error::Api {
            status: 404,
            error: "pool account not found".into(),
            retry_after: None,
            field: None,
        }
    );
    let bad = Query::new().with("debt_pool", "not-a-pool");
    assert!(matches!(
        lendex.liquidations(&bad).await,
        Err(Error::Api { status: 400, ref error, .. }) if error == "invalid"
    ));
}

#[actix_rt::test]
async fn a_long_poll_is_answered_by_a_change_and_a_quiet_one_by_304() {
    let m = market(|_| {}).await;
    let lendex = Client::new(&m.t.app.base);
    let q = Query::new();
    let poll = async |etag: Option<String>, wait: Duration| {
        lendex
            .poll::<UnhealthyResponse>(path::UNHEALTHY, &q, etag.as_deref(), Some(wait))
            .await
            .unwrap()
    };
    let (empty, etag) = poll(None, Duration::ZERO).await.changed().unwrap();
    assert!(empty.positions.is_empty());
    assert!(matches!(
        poll(Some(etag.clone()), Duration::from_millis(300)).await,
        Polled::NotModified
    ));

    let held = poll(Some(etag.clone()), Duration::from_secs(20));
    let change = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        m.account(500_000_000, 40_000_000_000).await
    };
    let (answer, owner) = tokio::join!(held, change);
    let (body, next) = answer.changed().expect("the change answers the held poll");
    assert_ne!(next, etag);
    assert!(body.positions.iter().any(|p| p.owner == owner));
}

#[actix_rt::test]
async fn the_feed_resumes_after_a_cut_with_nothing_lost_and_says_reset() {
    let m = market(|_| {}).await;
    let proxy = TcpProxy::start(&m.t.app.base).await;
    let lendex = Client::new(&proxy.url);
    let mut feed = lendex.feed(&Query::new());
    let next = async |feed: &mut lendex_client::Feed| {
        tokio::time::timeout(Duration::from_secs(15), feed.next())
            .await
            .expect("an event within 15 s")
            .unwrap()
    };
    let first = m.account(500_000_000, 40_000_000_000).await;
    let start = loop {
        let event = next(&mut feed).await;
        if event.name == "candidate_start" && event.data.contains(&first) {
            break event;
        }
    };
    assert!(start.id.is_some());

    // Cut under it; what happens meanwhile arrives after the resume, once.
    proxy.cut();
    let second = m.account(400_000_000, 40_000_000_000).await;
    let mut seen = Vec::new();
    loop {
        let event = next(&mut feed).await;
        assert_ne!(event.name, "reset", "a resume inside the window: {seen:?}");
        let done = event.name == "candidate_start" && event.data.contains(&second);
        seen.push(event);
        if done {
            break;
        }
    }
    assert!(feed.connects() >= 2, "it reconnected");
    assert!(
        !seen
            .iter()
            .any(|e| e.name == "candidate_start" && e.data.contains(&first)),
        "no snapshot again after the resume: {seen:?}"
    );

    // An id of another epoch cannot be resumed: the reset is handed over.
    let mut stale = lendex.feed(&Query::new()).resume_after("1.1");
    let event = next(&mut stale).await;
    assert_eq!(event.name, "reset", "{event:?}");
}

#[actix_rt::test]
async fn signed_calls_pass_and_a_stranger_is_refused() {
    let app = spawn_app().await;
    let lendex = Client::new(&app.base);
    let root = app.root.signer();
    let newcomer = Pubkey::new_unique();
    let added = lendex
        .add_admin(&root, &newcomer, Role::PoolAdmin, Some("ops"))
        .await
        .unwrap();
    assert!(added.ok);
    assert_eq!(
        lendex.me(&newcomer).await.unwrap().role,
        Some(Role::PoolAdmin)
    );

    let stranger = Wallet::new().signer();
    assert_eq!(
        lendex
            .add_admin(&stranger, &Pubkey::new_unique(), Role::PoolAdmin, None)
            .await
            .unwrap_err(),
        Error::Api {
            status: 401,
            error: "not authorized".into(),
            retry_after: None,
            field: None,
        }
    );
    assert!(lendex.revoke_admin(&root, &newcomer).await.unwrap().ok);
    assert_eq!(lendex.me(&newcomer).await.unwrap().role, None);
    let audit = lendex.audit(Some(&root), &Query::new()).await.unwrap();
    let actions: Vec<&str> = audit.entries.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(&actions[..2], ["revoke_admin", "add_admin"], "newest first");
}

#[actix_rt::test]
async fn webhooks_are_managed_through_the_typed_client() {
    let app = spawn_app().await;
    let lendex = Client::new(&app.base);
    let root = app.root.signer();
    let owner = Pubkey::new_unique().to_string();
    let new = lendex_client::NewWebhook {
        url: "https://93.184.215.14/rust".into(),
        below_wad: Some("1050000000000000000".into()),
        owners: Some(vec![owner.clone()]),
        ..Default::default()
    };
    // A fault names its field, as the body does.
    let bad = lendex_client::NewWebhook {
        url: "ftp://example.com".into(),
        ..Default::default()
    };
    let refused = lendex.create_webhook(&root, &bad).await.unwrap_err();
    assert_eq!(
        refused,
        Error::Api {
            status: 400,
            error: "invalid".into(),
            retry_after: None,
            field: Some("url".into()),
        }
    );
    assert_eq!(refused.to_string(), "400: invalid (url)");
    let created = lendex.create_webhook(&root, &new).await.unwrap();
    assert!(created.secret.starts_with("whsec_"));
    assert_eq!(created.webhook.owners, Some(vec![owner]));
    let id = created.webhook.id.clone();
    let listed = lendex.webhooks(&root).await.unwrap();
    assert_eq!(listed.webhooks.len(), 1);
    let deliveries = lendex
        .webhook_deliveries(&root, &id, Some(5))
        .await
        .unwrap();
    assert!(deliveries.deliveries.is_empty());
    assert_eq!(
        lendex
            .redeliver_webhook(&root, &id, &format!("msg_{:032x}", 1))
            .await
            .unwrap_err(),
        Error::Api {
            status: 404,
            error: "not found".into(),
            retry_after: None,
            field: None,
        }
    );
    assert_eq!(lendex.delete_webhook(&root, &id).await.unwrap().id, id);
    assert!(lendex.webhooks(&root).await.unwrap().webhooks.is_empty());
}
