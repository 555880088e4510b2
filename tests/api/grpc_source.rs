//! The Yellowstone gRPC source (docs/design.md §14) against a scripted Geyser
//! server speaking the real protocol: accounts indexed with no sync call, a
//! price move to the unhealthy list, the (slot, write version) order rule,
//! closed and unusable accounts, and pings answered.

use std::time::{Duration, Instant};

use lendex::domain::accounts::*;
use lendex::domain::pubkey::Pubkey;
use yellowstone_grpc_proto::prelude::{
    CommitmentLevel, subscribe_request_filter_accounts_filter::Filter,
    subscribe_request_filter_accounts_filter_memcmp::Data,
};

use crate::chain_support::*;
use crate::common::*;
use crate::fixtures::grpc::*;
use crate::fixtures::market::USD;
use lendex_testkit::geyser::*;

#[actix_rt::test]
async fn accounts_and_a_price_move_arrive_by_grpc_with_no_sync_call() {
    let server = ScriptedGeyser::start().await;
    let mut m = grpc_market(&server, |_| {}).await;
    let (app, program) = (&m.t.app, m.t.program);

    // The subscription: the program's accounts under two named filters, one
    // per discriminator, and slots, at confirmed.
    let sub = &server.subscriptions()[0];
    assert_eq!(sub.commitment, Some(CommitmentLevel::Confirmed as i32));
    assert_eq!(
        sub.from_slot, None,
        "nothing to resume at the first connect"
    );
    assert!(sub.slots.contains_key("lendex_slots"));
    for (name, discriminator) in [
        ("lendex_pools", POOL_DISCRIMINATOR),
        ("lendex_positions", POSITION_DISCRIMINATOR),
    ] {
        let filter = &sub.accounts[name];
        assert_eq!(filter.owner, vec![program.to_string()]);
        let Some(Filter::Memcmp(memcmp)) = &filter.filters[0].filter else {
            panic!("{filter:?}");
        };
        assert_eq!(memcmp.offset, 0);
        assert_eq!(memcmp.data, Some(Data::Bytes(discriminator.to_vec())));
    }

    // 500 USDC against 15 SOL at $20: 400 of weighted collateral for $300.
    // Written by the stream alone: the chain never holds these positions.
    let slot = m.t.chain.slot().await + 1_000;
    let owner = Pubkey::new_unique();
    let (usdc_at, usdc) = position_account(&program, &m.usdc, &owner, 500_000_000, 0);
    let (sol_at, sol) = position_account(&program, &m.sol, &owner, 0, 15_000_000_000);
    let started = Instant::now();
    for (key, position, version) in [(usdc_at, &usdc, 1), (sol_at, &sol, 2)] {
        let data = encode_position(position);
        server.send(slot, account_update(&key, &program, 1, data, slot, version));
    }
    let path = format!("/api/positions/{owner}");
    assert!(
        eventually(Duration::from_secs(10), async || {
            app.get(&path).await.1["positions"]
                .as_array()
                .is_some_and(|p| p.len() == 2)
        })
        .await,
        "the positions never arrived: {}",
        app.get(&path).await.1
    );
    eprintln!("streamed positions indexed in {:?}", started.elapsed());

    // SOL to $30: $450 of debt against $400, under water.
    m.sol_data.oracle_price = Some(30 * USD);
    let pool = encode_pool(&m.sol_data);
    server.send(
        slot + 1,
        account_update(&m.sol, &program, 1, pool, slot + 1, 1),
    );
    assert!(
        eventually(Duration::from_secs(10), async || {
            app.get("/api/positions/unhealthy").await.1["positions"]
                .as_array()
                .is_some_and(|p| p.iter().any(|r| r["owner"] == owner.to_string()))
        })
        .await,
        "the price move never put the account under water"
    );
    assert!(metric(app, "lendex_stream_updates_total", "source=\"grpc\"").await >= 3.0);
}

#[actix_rt::test]
async fn writes_follow_the_slot_and_write_version_order() {
    let server = ScriptedGeyser::start().await;
    let m = grpc_market(&server, |_| {}).await;
    let (app, program) = (&m.t.app, m.t.program);
    let slot = m.t.chain.slot().await + 1_000;
    let owner = Pubkey::new_unique();
    let (key, position) = position_account(&program, &m.usdc, &owner, 1, 0);
    let write = |deposit: u64, slot: u64, version: u64| {
        let data = position_bytes(&position, deposit);
        server.send(slot, account_update(&key, &program, 1, data, slot, version));
    };
    write(100, slot, 5);
    assert!(deposit_becomes(app, &owner, &m.usdc, 100).await);
    // An older write of the same slot, and the same write again: refused.
    write(50, slot, 3);
    write(60, slot, 5);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(deposit(app, &owner, &m.usdc).await, Some("100".into()));
    // A later write of the slot wins; any write of an older slot loses.
    write(70, slot, 6);
    assert!(deposit_becomes(app, &owner, &m.usdc, 70).await);
    write(10, slot - 1, 99);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(deposit(app, &owner, &m.usdc).await, Some("70".into()));
    // A later slot wins whatever its version.
    write(80, slot + 1, 1);
    assert!(deposit_becomes(app, &owner, &m.usdc, 80).await);
    // Out of order within one batch: the highest (slot, version) is kept.
    write(91, slot + 2, 2);
    write(90, slot + 2, 1);
    assert!(deposit_becomes(app, &owner, &m.usdc, 91).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(deposit(app, &owner, &m.usdc).await, Some("91".into()));
}

#[actix_rt::test]
async fn closed_accounts_are_removed_and_unusable_ones_skipped() {
    let server = ScriptedGeyser::start().await;
    let m = grpc_market(&server, |_| {}).await;
    let (app, program) = (&m.t.app, m.t.program);
    let slot = m.t.chain.slot().await + 1_000;
    let owner = Pubkey::new_unique();
    let (key, position) = position_account(&program, &m.usdc, &owner, 7, 0);
    let bytes = position_bytes(&position, 7);
    server.send(
        slot,
        account_update(&key, &program, 1, bytes.clone(), slot, 1),
    );
    assert!(deposit_becomes(app, &owner, &m.usdc, 7).await);

    // Unusable: shorter than its layout, an unknown discriminator, another
    // program's account the index does not hold. Counted, never written.
    let skipped = async || metric(app, "lendex_stream_skipped_total", "source=\"grpc\"").await;
    let before = skipped().await;
    // (Three accounts: of one account, a batch keeps only the latest write.)
    let stranger = || Pubkey::new_unique();
    let short = bytes[..40].to_vec();
    server.send(
        slot,
        account_update(&stranger(), &program, 1, short, slot, 2),
    );
    server.send(
        slot,
        account_update(&stranger(), &program, 1, vec![1; 200], slot, 3),
    );
    let other_program = Pubkey::new_unique();
    let other = account_update(&stranger(), &other_program, 1, bytes.clone(), slot, 4);
    server.send(slot, other);
    assert!(
        eventually(Duration::from_secs(10), async || skipped().await
            >= before + 3.0)
        .await,
        "{}",
        app.metrics_text().await
    );
    assert_eq!(deposit(app, &owner, &m.usdc).await, Some("7".into()));
    assert_eq!(app.get("/api/health").await.0, 200);

    // Closed: no lamports left. The row goes, as a reconciliation removes it.
    server.send(
        slot + 1,
        account_update(&key, &program, 0, bytes.clone(), slot + 1, 1),
    );
    assert!(
        eventually(Duration::from_secs(10), async || {
            deposit(app, &owner, &m.usdc).await.is_none()
        })
        .await,
        "the closed position stayed"
    );
    // Handed to another program (closed to the System program): also gone.
    let (key2, position2) = position_account(&program, &m.sol, &owner, 3, 0);
    let bytes2 = position_bytes(&position2, 3);
    server.send(
        slot + 2,
        account_update(&key2, &program, 1, bytes2.clone(), slot + 2, 1),
    );
    assert!(deposit_becomes(app, &owner, &m.sol, 3).await);
    let system = Pubkey::new_from_array([0; 32]);
    server.send(
        slot + 3,
        account_update(&key2, &system, 1, vec![], slot + 3, 1),
    );
    assert!(
        eventually(Duration::from_secs(10), async || {
            deposit(app, &owner, &m.sol).await.is_none()
        })
        .await,
        "the reassigned position stayed"
    );
}

#[actix_rt::test]
async fn the_servers_pings_are_answered_within_a_second() {
    let server = ScriptedGeyser::start().await;
    let _m = grpc_market(&server, |_| {}).await;
    for _ in 0..3 {
        let sent = Instant::now();
        let answered = server.ping_answers().len();
        server.send(0, ping());
        assert!(
            eventually(Duration::from_secs(1), async || {
                server.ping_answers().len() > answered
            })
            .await,
            "a ping went unanswered for a second"
        );
        let at = *server.ping_answers().last().unwrap();
        assert!(at >= sent);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Answering changed no filter: still the one subscription.
    assert_eq!(server.subscriptions().len(), 1);
}

#[actix_rt::test]
async fn a_slots_writes_are_one_change_so_no_account_flaps() {
    let server = ScriptedGeyser::start().await;
    let mut m = grpc_market(&server, |c| c.history.flush_interval_ms = 100).await;
    let (app, program) = (&m.t.app, m.t.program);
    // 500 USDC against 15 SOL at $20: 400 of weighted collateral for $300.
    let slot = m.t.chain.slot().await + 1_000;
    let owner = Pubkey::new_unique();
    let (usdc_at, usdc) = position_account(&program, &m.usdc, &owner, 500_000_000, 0);
    let (sol_at, sol) = position_account(&program, &m.sol, &owner, 0, 15_000_000_000);
    for (key, position, version) in [(usdc_at, &usdc, 1), (sol_at, &sol, 2)] {
        let data = encode_position(position);
        server.send(slot, account_update(&key, &program, 1, data, slot, version));
    }
    server.send(slot, slot_update(slot));
    assert!(deposit_becomes(app, &owner, &m.usdc, 500_000_000).await);
    let hf = || async {
        app.get(&format!("/api/positions/{owner}")).await.1["positions"][0]["health_factor_wad"]
            .as_str()
            .map(str::to_string)
    };
    // One slot: SOL to $30 ($450 of debt: under water alone), then USDC to
    // $2 ($800 of weighted collateral: 1.78). Applied one at a time the
    // account would go under and recover within the slot; the slot's
    // outcome is healthy.
    m.sol_data.oracle_price = Some(30 * USD);
    m.usdc_data.oracle_price = Some(2 * USD);
    let at = slot + 1;
    server.send(
        at,
        account_update(&m.sol, &program, 1, encode_pool(&m.sol_data), at, 1),
    );
    server.send(
        at,
        account_update(&m.usdc, &program, 1, encode_pool(&m.usdc_data), at, 2),
    );
    server.send(at, slot_update(at));
    let want = (800 * lendex::domain::wad::WAD / 450).to_string();
    assert!(
        eventually(Duration::from_secs(10), async || hf().await.as_deref()
            == Some(want.as_str()))
        .await,
        "{:?}",
        hf().await
    );
    let db = m.t.app.db.connect().await;
    let ticks: i64 = db
        .query_one(
            "SELECT count(DISTINCT tick) FROM feed_changes
             WHERE kind = 'p' AND (image->>'slot')::bigint = $1",
            &[&(at as i64)],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(ticks, 1, "the slot's two pool writes are one change");
    // History saw the slot's outcome: a point, no crossing either way.
    let points = eventually(Duration::from_secs(10), async || {
        crate::fixtures::history::points(app, &owner.to_string())
            .await
            .last()
            .is_some_and(|p| p["health_factor_wad"] == want.as_str())
    })
    .await;
    assert!(points, "the slot's outcome was recorded");
    let events = crate::fixtures::history::events(app, &format!("owner={owner}")).await;
    assert!(events.is_empty(), "{events:?}");
}
