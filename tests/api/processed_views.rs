//! Two views of one index (docs/design.md §15) over the scripted Geyser
//! server: a write seen at processed before its confirmation, then in both;
//! a dead slot's write retracted with `rolled_back`; ETags and streams per
//! view, an id of one view's stream resumed on the other told `reset`; a
//! second replica serving the same processed view.

use std::time::Duration;

use lendex::domain::accounts::encode_position;
use lendex::domain::forks::Commitment;
use lendex::domain::pubkey::Pubkey;
use lendex_client::Query;
use reqwest::header::ETAG;
use serde_json::Value;
use yellowstone_grpc_proto::prelude::SlotStatus;

use crate::chain_support::*;
use crate::common::*;
use crate::fixtures::feeds::Feed;
use crate::fixtures::grpc::metric;
use crate::fixtures::market::Market;
use crate::fixtures::processed::*;
use crate::fixtures::replicas::second_replica_with;
use lendex_testkit::geyser::*;

/// An owner with 500 USDC deposited and 15 SOL borrowed at $20 (health
/// factor 400 / 300), confirmed at `slot`; returns the owner and its SOL
/// position's key and account, for writes of other borrows.
fn borrower(
    server: &ScriptedGeyser,
    m: &Market,
    slot: u64,
) -> (Pubkey, Pubkey, lendex::domain::accounts::UserPosition) {
    let program = m.t.program;
    let owner = Pubkey::new_unique();
    let (usdc_at, usdc) = position_account(&program, &m.usdc, &owner, 500_000_000, 0);
    let (sol_at, sol) = position_account(&program, &m.sol, &owner, 0, 15_000_000_000);
    for (key, position, version) in [(usdc_at, &usdc, 1), (sol_at, &sol, 2)] {
        let data = encode_position(position);
        server.send(slot, account_update(&key, &program, 1, data, slot, version));
    }
    (owner, sol_at, sol)
}

/// The SOL borrow written at `slot`.
fn borrow(
    server: &ScriptedGeyser,
    m: &Market,
    (key, position): (&Pubkey, &lendex::domain::accounts::UserPosition),
    sol: u64,
    slot: u64,
) {
    let data = encode_position(&lendex::domain::accounts::UserPosition {
        borrow_principal: sol * 1_000_000_000,
        ..position.clone()
    });
    let update = account_update(key, &m.t.program, 1, data, slot, 10);
    server.send(slot, update);
}

async fn owners_under(app: &TestApp, view: &str) -> Vec<String> {
    let (status, body) = app
        .get(&format!("/api/positions/unhealthy?commitment={view}"))
        .await;
    assert_eq!(status, 200, "{body}");
    (body["positions"].as_array().unwrap().iter())
        .map(|p| p["owner"].as_str().unwrap().to_string())
        .collect()
}

async fn under_becomes(app: &TestApp, view: &str, owner: &Pubkey, under: bool) -> bool {
    eventually(Duration::from_secs(10), async || {
        owners_under(app, view).await.contains(&owner.to_string()) == under
    })
    .await
}

#[actix_rt::test]
async fn an_account_goes_under_at_processed_first_and_a_dead_slot_rolls_it_back() {
    let server = ScriptedGeyser::start().await;
    let m = processed_market(&server, |_| {}).await;
    let app = &m.t.app;
    let base = confirmed_base(&server, &m).await;
    let (owner, sol_at, sol) = borrower(&server, &m, base);
    assert!(
        eventually(Duration::from_secs(10), async || {
            app.get(&format!("/api/positions/{owner}")).await.1["positions"]
                .as_array()
                .is_some_and(|p| p.len() == 2)
        })
        .await
    );
    let mut processed = Feed::open_view(&app.base, "processed", None).await;
    let mut confirmed = Feed::open_view(&app.base, "confirmed", None).await;

    // 25 SOL borrowed in a processed slot: $500 against $400, under water at
    // processed only.
    borrow(&server, &m, (&sol_at, &sol), 25, base + 1);
    play(&server, base + 1, base);
    assert!(under_becomes(app, "processed", &owner, true).await);
    assert!(
        !owners_under(app, "confirmed")
            .await
            .contains(&owner.to_string())
    );
    let events = processed.read(1, Duration::from_secs(10)).await;
    let (name, data) = (&events[0].event, &events[0].data);
    assert_eq!(
        (name.as_str(), data["owner"].as_str()),
        ("candidate_start", Some(&*owner.to_string()))
    );
    assert_eq!(data["commitment"], "processed");
    assert_eq!(data["liquidation"]["commitment"], "processed");
    assert!(data.get("rolled_back").is_none(), "{data}");
    assert!(metric(app, "lendex_processed_view_accounts", "").await >= 1.0);

    // The views differ, and so do their tags and headers.
    let http = reqwest::Client::new();
    let get = |view: &'static str| {
        http.get(format!(
            "{}/api/positions/{owner}?commitment={view}",
            app.base
        ))
        .send()
    };
    let (p, c) = (
        get("processed").await.unwrap(),
        get("confirmed").await.unwrap(),
    );
    assert_eq!(p.headers()["lendex-commitment"], "processed");
    assert_eq!(c.headers()["lendex-commitment"], "confirmed");
    assert_ne!(p.headers()[ETAG], c.headers()[ETAG]);

    // The slot dies: the processed view rolls back, and says so.
    status(&server, base + 1, None, SlotStatus::SlotDead);
    let events = processed.read(1, Duration::from_secs(10)).await;
    let (name, data) = (&events[0].event, &events[0].data);
    assert_eq!(name, "candidate_stop", "{data}");
    assert_eq!(data["rolled_back"], true, "{data}");
    assert!(under_becomes(app, "processed", &owner, false).await);
    // The confirmed stream never heard of it.
    let heard = confirmed.read(1, Duration::from_millis(800)).await;
    assert!(heard.is_empty(), "{heard:?}");

    // Again in a slot that lives: seen at processed, then confirmed in both.
    borrow(&server, &m, (&sol_at, &sol), 25, base + 2);
    play(&server, base + 2, base);
    assert!(under_becomes(app, "processed", &owner, true).await);
    status(&server, base + 2, None, SlotStatus::SlotConfirmed);
    assert!(under_becomes(app, "confirmed", &owner, true).await);
    let events = confirmed.read(1, Duration::from_secs(10)).await;
    assert_eq!(events[0].event, "candidate_start");
    assert_eq!(events[0].data["commitment"], "confirmed");
    // Leaving the overlay for the confirmed view is no roll-back, and no event.
    let more = processed.read(1, Duration::from_millis(800)).await;
    assert!(
        more.iter().all(|f| f.data.get("rolled_back").is_none()),
        "{more:?}"
    );
    assert_eq!(
        owners_under(app, "processed").await,
        owners_under(app, "confirmed").await
    );
}

#[actix_rt::test]
async fn each_view_resumes_its_own_stream_and_refuses_the_others_id() {
    let server = ScriptedGeyser::start().await;
    let m = processed_market(&server, |_| {}).await;
    let app = &m.t.app;
    let base = confirmed_base(&server, &m).await;
    let (owner, sol_at, sol) = borrower(&server, &m, base);
    borrow(&server, &m, (&sol_at, &sol), 25, base + 1);
    play(&server, base + 1, base);
    assert!(under_becomes(app, "processed", &owner, true).await);

    let mut first = Feed::open_view(&app.base, "processed", None).await;
    let snapshot = first.read(1, Duration::from_secs(10)).await;
    assert_eq!(snapshot[0].event, "candidate_start");
    let id = snapshot[0].id.clone().expect("an id");
    // Resumed on its own view: exactly what came after, no reset.
    let mut again = Feed::open_view(&app.base, "processed", Some(&id)).await;
    borrow(&server, &m, (&sol_at, &sol), 30, base + 2);
    play(&server, base + 2, base + 1);
    let events = again.read(1, Duration::from_secs(10)).await;
    assert_eq!(events[0].event, "candidate_update", "{events:?}");
    assert!(events[0].seq() > snapshot[0].seq());
    // On the other view: reset, then that view's snapshot.
    let mut other = Feed::open_view(&app.base, "confirmed", Some(&id)).await;
    let events = other.read(1, Duration::from_secs(10)).await;
    assert_eq!(events[0].event, "reset", "{events:?}");
}

#[actix_rt::test]
async fn a_second_replica_serves_the_same_processed_view() {
    let server = ScriptedGeyser::start().await;
    let m = processed_market(&server, |_| {}).await;
    let app = &m.t.app;
    let env = [
        ("LENDEX_RPC__SOURCE", "grpc"),
        ("GRPC_URL", server.url.as_str()),
        ("LENDEX_RPC__COMMITMENT", "processed"),
        ("LENDEX_CHAIN__PROGRAM_ID", &*m.t.program.to_string()),
    ];
    let replica = second_replica_with(&m, &env).await;
    let base = confirmed_base(&server, &m).await;
    let (owner, sol_at, sol) = borrower(&server, &m, base);
    borrow(&server, &m, (&sol_at, &sol), 25, base + 1);
    play(&server, base + 1, base);
    assert!(under_becomes(app, "processed", &owner, true).await);
    let http = reqwest::Client::new();
    let path = "/api/positions/unhealthy?commitment=processed";
    let same = eventually(Duration::from_secs(10), async || {
        let a = http
            .get(format!("{}{path}", app.base))
            .send()
            .await
            .unwrap();
        let b = http
            .get(format!("{}{path}", replica.base))
            .send()
            .await
            .unwrap();
        a.headers()[ETAG] == b.headers()[ETAG]
    })
    .await;
    assert!(same, "the replicas' processed answers differ");
    // The follower reads no source, yet reports the leader's slots (within a
    // slot or two), so its console marks the same rows tentative.
    let slots = async |base: &str| -> (Option<u64>, Option<u64>) {
        let health: Value = http
            .get(format!("{base}/api/health"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let stream = &health["checks"]["sync"]["stream"];
        (
            stream["processed_slot"].as_u64(),
            stream["confirmed_slot"].as_u64(),
        )
    };
    let near = |a: Option<u64>, b: Option<u64>| a.zip(b).is_some_and(|(a, b)| a.abs_diff(b) <= 2);
    let told = eventually(Duration::from_secs(10), async || {
        let (leader, follower) = (slots(&app.base).await, slots(&replica.base).await);
        near(leader.0, follower.0) && near(leader.1, follower.1)
    })
    .await;
    assert!(
        told,
        "leader {:?}, follower {:?}",
        slots(&app.base).await,
        slots(&replica.base).await
    );
    let (_, body) = app.get(path).await;
    let rows: &Vec<Value> = body["positions"].as_array().unwrap();
    assert!(rows.iter().any(|r| r["owner"] == owner.to_string()));
    // The typed client reads either view of either replica.
    let client = lendex_client::Client::new(&replica.base);
    let processed = Query::new().view(Commitment::Processed);
    let answer = client.unhealthy(&processed).await.unwrap();
    assert!(
        answer
            .positions
            .iter()
            .any(|r| r.owner == owner.to_string())
    );
    let held = client
        .positions_in(&owner, Commitment::Processed)
        .await
        .unwrap();
    let sol_row = held
        .positions
        .iter()
        .find(|p| p.pool_address == m.sol.to_string());
    assert_eq!(sol_row.unwrap().borrow_principal, "25000000000");
    let confirmed = client
        .positions_in(&owner, Commitment::Confirmed)
        .await
        .unwrap();
    let sol_row = confirmed
        .positions
        .iter()
        .find(|p| p.pool_address == m.sol.to_string());
    assert_eq!(sol_row.unwrap().borrow_principal, "15000000000");
}
