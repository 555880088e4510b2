//! Oracle feeds at wire speed (docs/design.md §17), on a Yellowstone server
//! of our own (`lendex_testkit::geyser`) and the market `seed --feeds` wrote
//! in PostgreSQL, where pool 0 names the feed `load feed 0`. The service
//! reads the server at confirmed. Rounds of:
//! - a feed write moving pool 0's feed, timed to the feed view stream's last
//!   event (the pool view does not move);
//! - its crank, the pool's copy set to the feed's price, timed to the pool
//!   view stream's last event (the feed view only shortens its crank lists).
//!
//! Each moves every owner of pool 0 in its view, so a round is as many
//! events on either stream: the feed path against the pool path, measured
//! the same way.

use std::time::{Duration, Instant};

use lendex::domain::accounts::encode_pool;
use lendex::domain::pubkey::Pubkey;
use lendex::domain::pyth::{PriceUpdate, RECEIVER_PROGRAM};
use lendex_testkit::geyser::{account_update, slot_status};
use yellowstone_grpc_proto::prelude::SlotStatus;

use crate::feed::{self, p50_p99, round};

/// Pool 0's feed account at `price`, as the copy holds prices (exponent -8,
/// confidence 1000: equal to the copy at the same price).
fn feed_account(price: i64) -> Vec<u8> {
    PriceUpdate::full(price, 1000, -8, chrono::Utc::now().timestamp()).encode()
}

/// A pause before each timed write.
const SETTLE: Duration = Duration::from_secs(5);

/// Waits until the service at `api` reads the server.
async fn connected(api: &str) {
    let client = lendex_client::Client::new(api);
    loop {
        if let Ok(h) = client.health().await
            && h.checks.sync.stream.connected
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

pub async fn latency(api: &str, program: Pubkey, listen: &str, rounds: usize, low_percent: i64) {
    let server = crate::forks::serve(listen).await;
    connected(api).await;
    let key = |label: &str| -> Pubkey { crate::key(label).parse().expect("a key") };
    let (pool_key, feed_key) = (key("load pool 0"), key("load feed 0"));
    let receiver: Pubkey = RECEIVER_PROGRAM.parse().expect("the receiver");
    let base = crate::market::pool_price(0);
    let mut pool = crate::market::pool_account(0, base);
    pool.pyth_price_feed = Some(feed_key);
    // Far above the seed's slot (1). The feed first at the copy's price.
    let mut slot = 10_000_000;
    // Each write's slot confirmed right after it, as a node sends it: the
    // service's batch ends at the status, not at its wait for one.
    let confirm = |slot: u64| server.send(slot, slot_status(slot, None, SlotStatus::SlotConfirmed));
    let feed_at = |slot: u64, price: i64| {
        let update = account_update(&feed_key, &receiver, 1, feed_account(price), slot, 1);
        server.send(slot, update);
        confirm(slot);
    };
    feed_at(slot, base);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut at_pool = feed::subscribe_query(api, "?oracle=pool").await;
    let mut at_feed = feed::subscribe_query(api, "?oracle=feed").await;
    let quiet = Duration::from_millis(300);
    // By direction: a round that sinks every owner (a start and a quote
    // each) costs twice one that lifts them (a stop each), so one median
    // over both falls between the two and moves with a single round.
    let (mut to_feed, mut to_pool) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
    for n in 0..rounds {
        let price = match n % 2 {
            0 => base * low_percent / 100,
            _ => base,
        };
        // Each timed write starts on a quiet service: the last crank's
        // write-back of every re-scored health factor (the pool view's; the
        // feed view writes none back) would otherwise be in its way alone.
        // At 25,000 owners it takes more than 2 s (100,000 rows, logged).
        tokio::time::sleep(SETTLE).await;
        slot += 1;
        let started = Instant::now();
        feed_at(slot, price);
        let Some((_, f_last, f_events)) = round(&mut at_feed, started, quiet).await else {
            println!("round {n}: no feed view event within 10 s");
            return;
        };
        if let Ok(e) = at_pool.try_recv() {
            println!("round {n}: the pool view moved with the feed ({})", e.name);
            return;
        }
        // The crank: the copy set to the feed's price.
        tokio::time::sleep(SETTLE).await;
        slot += 1;
        pool.oracle_price = Some(price);
        let data = encode_pool(&pool);
        let started = Instant::now();
        server.send(
            slot,
            account_update(&pool_key, &program, 1, data, slot, 1 + n as u64),
        );
        confirm(slot);
        let Some((_, p_last, p_events)) = round(&mut at_pool, started, quiet).await else {
            println!("round {n}: no pool view event within 10 s");
            return;
        };
        // The feed view's shorter crank lists.
        round(&mut at_feed, started, quiet).await;
        println!(
            "round {n}: feed write -> last feed view event {f_last:?} ({f_events} events); \
             crank -> last pool view event {p_last:?} ({p_events})"
        );
        to_feed[n % 2].push(f_last);
        to_pool[n % 2].push(p_last);
    }
    for (direction, (to_feed, to_pool)) in ["sinking", "lifting"]
        .iter()
        .zip(to_feed.iter_mut().zip(to_pool.iter_mut()))
    {
        if to_feed.is_empty() {
            continue;
        }
        let (f50, f99) = p50_p99(to_feed);
        let (p50, p99) = p50_p99(to_pool);
        println!(
            "feed write -> last feed view event, {direction} rounds: median {f50:?} (p99 {f99:?}); \
             pool write -> last pool view event: median {p50:?} (p99 {p99:?}); ratio {:.2}",
            f50.as_secs_f64() / p50.as_secs_f64()
        );
    }
}
