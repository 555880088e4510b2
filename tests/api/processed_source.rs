//! The gRPC source at `processed` (docs/design.md §15) against the scripted
//! Geyser server playing slot trees: a write reaches the confirmed index only
//! with its slot's confirmation (explicit or implied), a dead or losing fork
//! never; the bound and the contradictions degrade health with the reason;
//! the refusal at start.

use std::time::Duration;

use yellowstone_grpc_proto::prelude::{CommitmentLevel, SlotStatus};

use crate::common::*;
use crate::fixtures::grpc::*;
use crate::fixtures::processed::*;
use crate::process::serve_command;
use lendex_testkit::geyser::*;

async fn slots_become(app: &TestApp, processed: u64, confirmed: u64) -> bool {
    eventually(Duration::from_secs(10), async || {
        let stream = stream_check(app).await;
        stream["processed_slot"] == processed && stream["confirmed_slot"] == confirmed
    })
    .await
}

#[actix_rt::test]
async fn a_write_reaches_the_index_with_its_confirmation_and_a_dead_slot_never() {
    let server = ScriptedGeyser::start().await;
    let m = processed_market(&server, |_| {}).await;
    let app = &m.t.app;

    // Subscribed at processed, every status between slots too.
    let sub = &server.subscriptions()[0];
    assert_eq!(sub.commitment, Some(CommitmentLevel::Processed as i32));
    let slots = &sub.slots["lendex_slots"];
    assert_eq!(slots.filter_by_commitment, Some(false));
    assert_eq!(slots.interslot_updates, Some(true));

    let base = confirmed_base(&server, &m).await;
    let account = Account::new(&server, &m);
    account.write(100, base + 1, 1);
    play(&server, base + 1, base);
    assert!(
        slots_become(app, base + 1, base).await,
        "{}",
        stream_check(app).await
    );
    let stream = stream_check(app).await;
    assert_eq!(stream["commitment"], "processed");
    assert_eq!(stream["slot_tree_error"], serde_json::Value::Null);
    // Processed, not confirmed: not in the index.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(deposit(app, &account.owner, &m.usdc).await, None);

    status(&server, base + 1, Some(base), SlotStatus::SlotConfirmed);
    assert!(deposit_becomes(app, &account.owner, &m.usdc, 100).await);

    // A slot that dies after it completed: its write never arrives, even
    // when the slot built beside it is confirmed.
    account.write(200, base + 2, 2);
    play(&server, base + 2, base + 1);
    status(&server, base + 2, None, SlotStatus::SlotDead);
    account.write(300, base + 3, 3);
    play(&server, base + 3, base + 1);
    status(&server, base + 3, None, SlotStatus::SlotConfirmed);
    assert!(deposit_becomes(app, &account.owner, &m.usdc, 300).await);
    assert!(slots_become(app, base + 3, base + 3).await);
    // A late write of the dead slot is dropped too.
    account.write(250, base + 2, 9);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        deposit(app, &account.owner, &m.usdc).await,
        Some("300".into())
    );
    assert!(metric(app, "lendex_chain_slots_abandoned_total", "").await >= 1.0);
    assert!(metric(app, "lendex_chain_abandoned_writes_dropped_total", "").await >= 2.0);
    assert!(metric(app, "lendex_chain_slot_statuses_total", "status=\"dead\"").await >= 1.0);
    assert!(metric(app, "lendex_chain_slot_confirmation_seconds_count", "").await >= 2.0);
    // The views' slots, as the confirmation-stalled alert reads them.
    let slot = |view: &'static str| metric(app, "lendex_chain_slot{", view);
    assert_eq!(slot("view=\"confirmed\"").await, (base + 3) as f64);
    assert_eq!(slot("view=\"processed\"").await, (base + 3) as f64);
    assert_eq!(
        metric(app, "lendex_chain_slot_tree_problem ", "").await,
        0.0
    );
}

#[actix_rt::test]
async fn a_confirmation_implies_its_ancestors_and_children_may_come_first() {
    let server = ScriptedGeyser::start().await;
    let m = processed_market(&server, |_| {}).await;
    let app = &m.t.app;
    let base = confirmed_base(&server, &m).await;
    let account = Account::new(&server, &m);

    // Two forks on base: 1 and 2. The child of 2 is confirmed before
    // anything of 2 arrives, and 2's own confirmation never does: 2 is
    // confirmed by implication, whatever its own parent.
    account.write(111, base + 1, 1);
    play(&server, base + 1, base);
    status(&server, base + 3, Some(base + 2), SlotStatus::SlotConfirmed);
    account.write(222, base + 2, 2);
    assert!(deposit_becomes(app, &account.owner, &m.usdc, 222).await);
    assert!(slots_become(app, base + 3, base + 3).await);
    // 1 stays undecided until 2's link shows it is a sibling: then abandoned.
    let abandoned = metric(app, "lendex_chain_slots_abandoned_total", "").await;
    status(&server, base + 2, Some(base), SlotStatus::SlotCreatedBank);
    assert!(
        eventually(Duration::from_secs(10), async || {
            metric(app, "lendex_chain_slots_abandoned_total", "").await > abandoned
        })
        .await
    );
    // The losing fork's write stays out.
    assert_eq!(
        deposit(app, &account.owner, &m.usdc).await,
        Some("222".into())
    );
}

#[actix_rt::test]
async fn a_server_that_never_confirms_degrades_health_within_the_bound() {
    let server = ScriptedGeyser::start().await;
    let m = processed_market(&server, |c| c.rpc.max_unconfirmed_slots = 8).await;
    let app = &m.t.app;
    let base = confirmed_base(&server, &m).await;
    for slot in base + 1..=base + 20 {
        play(&server, slot, slot - 1);
    }
    assert!(
        degraded_with(app, "rpc.max_unconfirmed_slots (8)").await,
        "{}",
        app.get("/api/health").await.1
    );
    assert!(metric(app, "lendex_chain_unconfirmed_slots_evicted_total", "").await >= 12.0);
    assert!(metric(app, "lendex_chain_unconfirmed_slots ", "").await <= 8.0);

    // Confirmations resume: healthy again.
    status(
        &server,
        base + 20,
        Some(base + 19),
        SlotStatus::SlotConfirmed,
    );
    let healthy = eventually(Duration::from_secs(10), async || {
        let (_, health) = app.get("/api/health").await;
        health["status"] == "ok" && health["checks"]["sync"]["stream"]["slot_tree_error"].is_null()
    })
    .await;
    assert!(healthy, "{}", app.get("/api/health").await.1);
}

#[actix_rt::test]
async fn contradictions_and_bad_links_are_counted_never_fatal() {
    let server = ScriptedGeyser::start().await;
    let m = processed_market(&server, |_| {}).await;
    let app = &m.t.app;
    let base = confirmed_base(&server, &m).await;
    // A parent at or above its child, a slot far in the future: refused.
    status(
        &server,
        base + 1,
        Some(base + 1),
        SlotStatus::SlotCreatedBank,
    );
    status(&server, base + 2, Some(base + 5), SlotStatus::SlotProcessed);
    status(&server, u64::MAX, Some(base), SlotStatus::SlotProcessed);
    assert!(
        eventually(Duration::from_secs(10), async || {
            metric(app, "lendex_chain_slot_problems_total", "parent_not_below").await >= 2.0
                && metric(app, "lendex_chain_slot_problems_total", "far_future").await >= 1.0
        })
        .await
    );
    assert!(stream_check(app).await["slot_tree_error"].is_null());

    // A confirmation of a dead slot: health says so, the index is
    // reconciled, and the next confirmation makes the tree sound again.
    play(&server, base + 1, base);
    status(&server, base + 1, None, SlotStatus::SlotDead);
    status(&server, base + 1, None, SlotStatus::SlotConfirmed);
    assert!(
        degraded_with(app, "ConfirmedAbandoned").await,
        "{}",
        app.get("/api/health").await.1
    );
    play(&server, base + 2, base + 1);
    status(&server, base + 2, None, SlotStatus::SlotConfirmed);
    assert!(
        eventually(Duration::from_secs(10), async || {
            stream_check(app).await["slot_tree_error"].is_null()
        })
        .await
    );
    // Still serving.
    assert_eq!(app.get("/api/positions/unhealthy").await.0, 200);
}

#[actix_rt::test]
async fn processed_needs_the_grpc_source_and_says_so_at_start() {
    let db = TestDb::create().await;
    let port = free_ports::<1>()[0];
    for (commitment, says) in [
        (
            "processed",
            "rpc.commitment = \"processed\" needs rpc.source = \"grpc\"",
        ),
        ("finalized", "`confirmed` or `processed`"),
    ] {
        let out = serve_command(&db, port, &[("LENDEX_RPC__COMMITMENT", commitment)])
            .stderr(std::process::Stdio::piped())
            .output()
            .expect("run lendex serve");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{commitment}: started");
        assert!(stderr.contains(says), "{commitment}: {stderr}");
    }
}

/// Waits until health is degraded with a slot tree error saying `why`.
async fn degraded_with(app: &TestApp, why: &str) -> bool {
    eventually(Duration::from_secs(10), async || {
        let (_, health) = app.get("/api/health").await;
        let error = &health["checks"]["sync"]["stream"]["slot_tree_error"];
        health["status"] == "degraded" && error.as_str().is_some_and(|e| e.contains(why))
    })
    .await
}

/// Waits until the source reconnected after `before` reconnects.
async fn reconnected(app: &TestApp, before: u64) -> bool {
    eventually(Duration::from_secs(15), async || {
        let stream = stream_check(app).await;
        stream["connected"] == true && stream["reconnects"].as_u64() > Some(before)
    })
    .await
}

#[actix_rt::test]
async fn a_cut_mid_fork_resumes_and_the_losing_fork_never_reaches_the_index() {
    let server = ScriptedGeyser::start().await;
    server.set_first_available(Some(0));
    let m = processed_market(&server, |_| {}).await;
    let app = &m.t.app;
    let base = confirmed_base(&server, &m).await;
    let account = Account::new(&server, &m);
    let at = (&account.owner, &m.usdc);
    // Two forks on base; the higher one is the best chain.
    account.write(100, base + 1, 1);
    play(&server, base + 1, base);
    account.write(200, base + 2, 2);
    play(&server, base + 2, base);
    assert!(deposit_at_becomes(app, "processed", at, Some(200)).await);

    // Cut mid-fork: the stream resumes from the last slot it had.
    let before = stream_check(app).await["reconnects"].as_u64().unwrap();
    server.drop_clients();
    assert!(
        reconnected(app, before).await,
        "{}",
        stream_check(app).await
    );
    let resumed = server.subscriptions().last().unwrap().from_slot;
    assert_eq!(resumed, Some(base + 2));

    // The other fork wins: both views follow it, and the confirmed one never
    // held the loser's write.
    status(&server, base + 1, None, SlotStatus::SlotConfirmed);
    assert!(deposit_at_becomes(app, "confirmed", at, Some(100)).await);
    assert!(deposit_at_becomes(app, "processed", at, Some(100)).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        deposit_at(app, "confirmed", at.0, at.1).await,
        Some("100".into())
    );
}

#[actix_rt::test]
async fn a_reconnect_without_replay_falls_back_to_the_confirmed_view() {
    let server = ScriptedGeyser::start().await;
    let m = processed_market(&server, |_| {}).await;
    let app = &m.t.app;
    let base = confirmed_base(&server, &m).await;
    let account = Account::new(&server, &m);
    let at = (&account.owner, &m.usdc);
    account.write(100, base + 1, 1);
    play(&server, base + 1, base);
    assert!(deposit_at_becomes(app, "processed", at, Some(100)).await);

    // No replay kept: what was open is forgotten, the processed view is the
    // confirmed one until new slots arrive.
    let before = stream_check(app).await["reconnects"].as_u64().unwrap();
    server.drop_clients();
    assert!(reconnected(app, before).await);
    assert_eq!(server.subscriptions().last().unwrap().from_slot, None);
    assert!(deposit_at_becomes(app, "processed", at, None).await);
    assert_eq!(deposit_at(app, "confirmed", at.0, at.1).await, None);
    account.write(300, base + 3, 3);
    play(&server, base + 3, base);
    assert!(deposit_at_becomes(app, "processed", at, Some(300)).await);
}
