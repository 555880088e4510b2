//! The gRPC source when things go wrong (docs/design.md §14): a cut stream resumed
//! from the last slot when the server still holds it (nothing lost, no
//! reconcile), reconciled when it does not or refuses; a bad token reported
//! and retried with backoff; a silent server left; a server gone and back.

use std::time::{Duration, Instant};

use lendex::domain::pubkey::Pubkey;
use serde_json::Value;
use yellowstone_grpc_proto::tonic::Status;

use crate::chain_support::*;
use crate::common::*;
use crate::fixtures::grpc::*;
use crate::fixtures::market::market;
use lendex_testkit::geyser::*;

async fn last_refresh(app: &TestApp) -> Value {
    app.get("/api/health").await.1["checks"]["sync"]["lastRefreshAt"].clone()
}

/// Until a reconcile has completed (the subscription asks for one).
async fn refreshed(app: &TestApp) -> Value {
    assert!(
        eventually(Duration::from_secs(15), async || !last_refresh(app)
            .await
            .is_null())
        .await
    );
    // The leader's first reconcile and the subscription's may run one after
    // the other: wait until they are done.
    let mut last = last_refresh(app).await;
    loop {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let now = last_refresh(app).await;
        if now == last {
            return now;
        }
        last = now;
    }
}

#[actix_rt::test]
async fn a_cut_stream_resumes_from_the_last_slot_with_nothing_lost() {
    let server = ScriptedGeyser::start().await;
    let m = grpc_market(&server, |_| {}).await;
    let (app, program) = (&m.t.app, m.t.program);
    let slot = m.t.chain.slot().await + 1_000;
    server.set_first_available(Some(slot - 500));
    let owner = Pubkey::new_unique();
    let (key, position) = position_account(&program, &m.usdc, &owner, 1, 0);
    let update = |deposit: u64, slot: u64, version: u64| {
        account_update(
            &key,
            &program,
            1,
            position_bytes(&position, deposit),
            slot,
            version,
        )
    };
    server.send(slot, update(10, slot, 1));
    assert!(deposit_becomes(app, &owner, &m.usdc, 10).await);
    let refreshed_at = refreshed(app).await;

    // The server closes the stream; a write of the same slot and one of the
    // next are made while the client is away.
    server.drop_clients();
    server.keep(slot, update(11, slot, 2));
    server.keep(slot + 1, update(12, slot + 1, 1));
    assert!(deposit_becomes(app, &owner, &m.usdc, 12).await);
    let subs = server.subscriptions();
    assert_eq!(subs.len(), 2, "one reconnect");
    assert_eq!(
        subs[1].from_slot,
        Some(slot),
        "resumed at the last slot seen"
    );
    // Nothing was missed, so nothing was reconciled.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(last_refresh(app).await, refreshed_at);
    let stream = stream_check(app).await;
    assert_eq!(stream["connected"], true, "{stream}");
    assert_eq!(stream["reconnects"], 1, "{stream}");
    // The first slot update after the resume says how far it replayed.
    server.send(slot + 5, slot_update(slot + 5));
    assert!(
        eventually(Duration::from_secs(10), async || {
            metric(app, "lendex_stream_replayed_slots_total", "grpc").await >= 5.0
        })
        .await,
        "{}",
        app.metrics_text().await
    );
}

#[actix_rt::test]
async fn without_replay_a_reconnect_reconciles() {
    let server = ScriptedGeyser::start().await;
    let m = grpc_market(&server, |_| {}).await;
    let (app, program) = (&m.t.app, m.t.program);
    let slot = m.t.chain.slot().await + 1_000;
    let owner = Pubkey::new_unique();
    let (key, position) = position_account(&program, &m.usdc, &owner, 1, 0);
    let bytes = position_bytes(&position, 5);
    server.send(slot, account_update(&key, &program, 1, bytes, slot, 1));
    assert!(deposit_becomes(app, &owner, &m.usdc, 5).await);
    let refreshed_at = refreshed(app).await;

    // The server keeps no replay: the client subscribes from now, and the
    // reconciliation brings what changed on chain meanwhile.
    server.set_first_available(None);
    server.drop_clients();
    let owner2 = Pubkey::new_unique();
    m.t.put_position(&m.sol, &owner2, 9, 0).await;
    assert!(
        deposit_becomes(app, &owner2, &m.sol, 9).await,
        "not reconciled"
    );
    // The reconcile records its end after its last pool's write is served.
    assert!(
        eventually(Duration::from_secs(10), async || last_refresh(app).await
            != refreshed_at)
        .await,
        "the reconcile ended"
    );
    let subs = server.subscriptions();
    assert_eq!(subs.last().unwrap().from_slot, None);

    // A server that says it holds the slot and then refuses it: subscribed
    // again from now at once, and reconciled.
    let refreshed_at = refreshed(app).await;
    server.set_first_available(Some(0));
    server.refuse_replay();
    let n = server.subscriptions().len();
    server.drop_clients();
    assert!(
        eventually(Duration::from_secs(10), async || {
            server.subscriptions().len() >= n + 2 && server.subscribers() == 1
        })
        .await
    );
    let subs = server.subscriptions();
    assert!(subs[n].from_slot.is_some(), "replay asked for first");
    assert_eq!(subs.last().unwrap().from_slot, None);
    assert!(
        eventually(Duration::from_secs(10), async || last_refresh(app).await
            != refreshed_at)
        .await,
        "not reconciled after the refusal"
    );
}

#[actix_rt::test]
async fn a_bad_token_is_reported_and_retried_with_backoff() {
    let server = ScriptedGeyser::with_token("the right one").await;
    let m = market(|c| {
        c.rpc.source = lendex::config::ChainSource::Grpc;
        c.rpc.grpc_url = server.url.clone();
        c.rpc.grpc_x_token = "a wrong one".into();
        c.sync.interval_seconds = 3600;
    })
    .await;
    let app = &m.t.app;
    assert!(
        eventually(Duration::from_secs(15), async || {
            stream_check(app).await["lastError"]
                .as_str()
                .is_some_and(|e| e.contains("x-token"))
        })
        .await,
        "{}",
        stream_check(app).await
    );
    let stream = stream_check(app).await;
    assert_eq!(stream["connected"], false);
    assert_eq!(stream["source"], "grpc");
    // The service itself stays up; a source that is down does not by itself
    // degrade health (the poll keeps the index fresh).
    let (status, health) = app.get("/api/health").await;
    assert_eq!(status, 200, "{health}");
    // Retried, backing off: never more than 3 attempts a second, and the
    // waits grow (at most 5 s).
    tokio::time::sleep(Duration::from_secs(4)).await;
    let attempts = server.attempts();
    assert!(attempts.len() >= 3, "{} attempts", attempts.len());
    for pair in attempts.windows(2) {
        assert!(
            pair[1] - pair[0] >= Duration::from_millis(300),
            "{attempts:?}"
        );
    }
    let waits: Vec<Duration> = attempts.windows(2).map(|p| p[1] - p[0]).collect();
    assert!(waits.last() > waits.first(), "{waits:?}");
}

#[actix_rt::test]
async fn a_silent_server_is_left_and_a_failing_one_reconnected() {
    let server = ScriptedGeyser::start().await;
    let m = grpc_market(&server, |c| c.rpc.ws_silence_ms = 1000).await;
    let app = &m.t.app;
    // Nothing at all for the silence: the client leaves and subscribes again.
    assert!(
        eventually(Duration::from_secs(10), async || {
            server.subscriptions().len() >= 2
        })
        .await,
        "a silent stream was kept"
    );
    // Slot updates keep it alive.
    let keep_alive = async {
        for k in 0..12u64 {
            server.send(1, slot_update(1 + k));
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    };
    let n = server.subscriptions().len();
    keep_alive.await;
    assert!(server.subscriptions().len() <= n + 1);

    // A stream that fails mid-way: reconnected, and said so meanwhile.
    let n = server.subscriptions().len();
    server.fail_clients(Status::internal("garbage"));
    assert!(
        eventually(Duration::from_secs(10), async || {
            server.subscriptions().len() > n
        })
        .await
    );
    assert!(connected(app).await);
    assert_eq!(app.get("/api/health").await.0, 200);
}

#[actix_rt::test]
async fn a_server_gone_and_back_is_found_again_at_once() {
    let mut server = ScriptedGeyser::start().await;
    let m = grpc_market(&server, |_| {}).await;
    let app = &m.t.app;
    server.down();
    assert!(
        eventually(Duration::from_secs(10), async || {
            stream_check(app).await["connected"] == false
        })
        .await
    );
    // Down long enough for the backoff to reach seconds.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let n = server.subscriptions().len();
    let back = Instant::now();
    server.up().await;
    assert!(
        eventually(Duration::from_secs(15), async || server
            .subscriptions()
            .len()
            > n)
        .await,
        "never came back"
    );
    assert!(connected(app).await);
    // The node is asked every half second whether it listens: it is found
    // long before the backoff's 5 s (a loose bound, for a slow day).
    eprintln!(
        "resubscribed {:?} after the server came back",
        back.elapsed()
    );
}

#[actix_rt::test]
async fn a_node_that_accepts_and_closes_is_found_again_within_two_seconds() {
    // A balancer in front of the node: while its backend is down it accepts
    // each connection and closes it at once.
    let server = ScriptedGeyser::start().await;
    let proxy = lendex_testkit::proxy::TcpProxy::start(&server.url).await;
    let url = proxy.url.clone();
    let m = market(|c| {
        c.rpc.source = lendex::config::ChainSource::Grpc;
        c.rpc.grpc_url = url;
        c.sync.interval_seconds = 3600;
    })
    .await;
    let app = &m.t.app;
    assert!(connected(app).await);
    proxy.down();
    assert!(
        eventually(Duration::from_secs(10), async || {
            stream_check(app).await["connected"] == false
        })
        .await
    );
    // Down long enough for the backoff to reach its 5 s.
    tokio::time::sleep(Duration::from_secs(8)).await;
    // Back right after the client knocked (an attempt or a probe): with the
    // backoff alone the next attempt is 4 to 6 s away.
    let knocks = proxy.accepted.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        eventually(Duration::from_secs(10), async || {
            proxy.accepted.load(std::sync::atomic::Ordering::SeqCst) > knocks
        })
        .await
    );
    let n = server.subscriptions().len();
    let back = Instant::now();
    proxy.up();
    assert!(
        eventually(Duration::from_secs(15), async || server
            .subscriptions()
            .len()
            > n)
        .await,
        "never came back"
    );
    let took = back.elapsed();
    eprintln!("subscribed again {took:?} after the node came back");
    assert!(
        took < Duration::from_secs(3),
        "subscribed again {took:?} after the node came back"
    );
    assert!(connected(app).await);
}
