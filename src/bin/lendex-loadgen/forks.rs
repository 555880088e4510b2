//! Processed commitment (docs/design.md §15) on a Yellowstone server of our
//! own (`lendex_testkit::geyser`), since the local chain has no forks and no
//! processed slots: it plays slot trees over the first registered pool, whose
//! account it reads from the chain once.
//! - `forks-demo`: mainnet's rhythm, for watching: a slot every 400 ms with
//!   its bank, processed and completed statuses and a move of the pool's
//!   price; its confirmation 1.2 s later; now and then a slot that dies after
//!   it completed, or a fork that loses. Prints what it plays, and every few
//!   seconds the accounts under water in each view.
//! - `processed-latency`: the figures, on the market `seed` wrote in
//!   PostgreSQL (pool 0 played as `market::pool_account` builds it). Rounds
//!   of a price write at processed timed to the last event of the processed
//!   stream, its confirmation timed to the last event of the confirmed
//!   stream, and a write whose slot then dies timed from the dead status to
//!   the last correction.

use std::time::{Duration, Instant};

use lendex::domain::accounts::{LendingPool, check_pool, encode_pool};
use lendex::domain::pubkey::Pubkey;
use lendex_testkit::geyser::{Options, ScriptedGeyser, account_update, slot_status};
use rand::{Rng, SeedableRng, rngs::StdRng};
use solana_rpc_client::nonblocking::rpc_client::RpcClient;
use yellowstone_grpc_proto::prelude::SlotStatus;

use crate::feed::{self, p50_p99, round};

/// The pool played, and the server playing it.
struct Player {
    server: ScriptedGeyser,
    program: Pubkey,
    pool_key: Pubkey,
    pool: LendingPool,
    base_price: i64,
    version: u64,
}

/// A Yellowstone server of our own on `listen`, pinging as real ones do.
pub(crate) async fn serve(listen: &str) -> ScriptedGeyser {
    let server = ScriptedGeyser::start_with(Options {
        listen: listen.to_string(),
        keep_sent: false,
        capacity: 1 << 16,
        ping_every: Some(Duration::from_secs(10)),
    })
    .await;
    println!("Yellowstone server on {}", server.url);
    server
}

impl Player {
    /// Serves on `listen` and reads the first pool the service at `api`
    /// registered from the chain at `rpc`.
    async fn start(api: &str, rpc: &str, program: Pubkey, listen: &str) -> Player {
        let server = serve(listen).await;
        let client = lendex_client::Client::new(api);
        let pool_key = loop {
            match client.pools().await {
                Ok(pools) if !pools.pools.is_empty() => {
                    break pools.pools[0].pool_address.parse().expect("a pool address");
                }
                _ => tokio::time::sleep(Duration::from_millis(500)).await,
            }
        };
        let chain = RpcClient::new(rpc.to_string());
        let read = lendex::chain::rpc::get_accounts(&chain, &[pool_key])
            .await
            .expect("read the pool");
        let pool = check_pool(&program, read[0].parts()).expect("the pool is on the chain");
        let base_price = pool.oracle_price.expect("the pool has a price");
        Player {
            server,
            program,
            pool_key,
            pool,
            base_price,
            version: 1,
        }
    }

    /// The pool at `price`, written in `slot`.
    fn price(&mut self, slot: u64, price: i64) {
        self.pool.oracle_price = Some(price);
        self.version += 1;
        let data = encode_pool(&self.pool);
        let update = account_update(&self.pool_key, &self.program, 1, data, slot, self.version);
        self.server.send(slot, update);
    }

    fn status(&self, slot: u64, parent: Option<u64>, status: SlotStatus) {
        self.server.send(slot, slot_status(slot, parent, status));
    }

    /// A slot as its leader makes it: bank, processed, completed.
    fn play(&self, slot: u64, parent: u64) {
        for status in [
            SlotStatus::SlotCreatedBank,
            SlotStatus::SlotProcessed,
            SlotStatus::SlotCompleted,
        ] {
            self.status(slot, Some(parent), status);
        }
    }
}

/// Waits until the service at `api` reads the server at processed.
async fn connected(api: &str) {
    let client = lendex_client::Client::new(api);
    loop {
        if let Ok(h) = client.health().await
            && h.checks.sync.stream.connected
        {
            let commitment = h.checks.sync.stream.commitment;
            assert_eq!(commitment, "processed", "start the service at processed");
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The first slot played: far above the local chain's, so a reconcile's
/// reads (at the chain's slot) never overwrite what is played.
async fn first_slot(rpc: &str) -> u64 {
    let chain = RpcClient::new(rpc.to_string());
    chain.get_slot().await.unwrap_or(0) + 10_000_000
}

pub async fn demo(api: &str, rpc: &str, program: Pubkey, listen: &str) {
    let mut player = Player::start(api, rpc, program, listen).await;
    connected(api).await;
    let mut rng = StdRng::seed_from_u64(15);
    let mut slot = first_slot(rpc).await;
    player.status(slot, None, SlotStatus::SlotConfirmed);
    // Slots played and not confirmed yet, oldest first, with when to confirm.
    let mut waiting: Vec<(u64, Instant)> = Vec::new();
    let (mut tip, mut price) = (slot, player.base_price);
    let mut shown = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(400));
    loop {
        tick.tick().await;
        slot += 1;
        // A random walk of the price, between a third and 1.3 of where it began.
        let step = rng.gen_range(-30..=30) as i64;
        price =
            (price + price * step / 1000).clamp(player.base_price / 3, player.base_price * 13 / 10);
        player.price(slot, price);
        player.play(slot, tip);
        let roll = rng.gen_range(0..100);
        if roll < 4 {
            // Dies after it completed: the next slot is built on its parent.
            tokio::time::sleep(Duration::from_millis(150)).await;
            player.status(slot, None, SlotStatus::SlotDead);
            println!("slot {slot}: price {price}, then dead: its write rolls back");
            continue;
        }
        if roll < 7 {
            // A sibling on the same parent with another price: it loses when
            // this slot is confirmed.
            let sibling = slot + 1;
            player.price(sibling, price * 8 / 10);
            player.play(sibling, tip);
            println!(
                "slot {sibling}: a fork beside {slot} (price {}), which will lose",
                price * 8 / 10
            );
            slot = sibling;
        } else {
            println!("slot {slot}: price {price}");
        }
        tip = if roll < 7 { slot - 1 } else { slot };
        waiting.push((tip, Instant::now() + Duration::from_millis(1200)));
        while let Some(&(confirm, at)) = waiting.first() {
            if at > Instant::now() {
                break;
            }
            player.status(confirm, None, SlotStatus::SlotConfirmed);
            waiting.remove(0);
        }
        if shown.elapsed() >= Duration::from_secs(5) {
            shown = Instant::now();
            let under = |view| async move { under_water(api, view).await };
            println!(
                "  under water: {} at processed, {} at confirmed",
                under("processed").await,
                under("confirmed").await
            );
        }
    }
}

async fn under_water(api: &str, view: &str) -> usize {
    let url = format!("{api}/api/positions/unhealthy?limit=200&commitment={view}");
    let body: serde_json::Value = match reqwest::get(url).await {
        Ok(res) => res.json().await.unwrap_or_default(),
        Err(_) => return 0,
    };
    body["positions"].as_array().map_or(0, Vec::len)
}

pub async fn latency(api: &str, program: Pubkey, listen: &str, rounds: usize, low_percent: i64) {
    let base_price = crate::market::pool_price(0);
    let mut player = Player {
        server: serve(listen).await,
        program,
        pool_key: crate::key("load pool 0").parse().expect("a key"),
        pool: crate::market::pool_account(0, base_price),
        base_price,
        version: 1,
    };
    connected(api).await;
    // Far above the seed's slot (1).
    let mut confirmed_tip = 10_000_000;
    player.status(confirmed_tip, None, SlotStatus::SlotConfirmed);
    let mut processed = feed::subscribe_view(api, "processed").await;
    let mut confirmed = feed::subscribe_view(api, "confirmed").await;
    let (base, quiet) = (player.base_price, Duration::from_millis(300));
    let (mut to_processed, mut to_confirmed, mut to_correction) =
        (Vec::new(), Vec::new(), Vec::new());
    let mut slot = confirmed_tip;
    for n in 0..rounds {
        let low = base * low_percent / 100;
        let (now_price, other) = if n % 2 == 0 { (low, base) } else { (base, low) };
        // A write at processed, to the processed stream's last event.
        slot += 1;
        player.price(slot, now_price);
        let started = Instant::now();
        player.play(slot, confirmed_tip);
        let Some((_, p_last, p_events)) = round(&mut processed, started, quiet).await else {
            println!("round {n}: no processed event within 10 s");
            continue;
        };
        // Its confirmation, to the confirmed stream's last event.
        let started = Instant::now();
        player.status(slot, None, SlotStatus::SlotConfirmed);
        confirmed_tip = slot;
        let Some((_, c_last, c_events)) = round(&mut confirmed, started, quiet).await else {
            println!("round {n}: no confirmed event within 10 s");
            continue;
        };
        // The other price in a slot that dies: from the dead status to the
        // last correction of the processed stream.
        slot += 1;
        player.price(slot, other);
        let started = Instant::now();
        player.play(slot, confirmed_tip);
        round(&mut processed, started, quiet).await;
        let started = Instant::now();
        player.status(slot, None, SlotStatus::SlotDead);
        let Some((_, d_last, d_events)) = round(&mut processed, started, quiet).await else {
            println!("round {n}: no correction within 10 s");
            continue;
        };
        // Back to the confirmed price: `now_price` again.
        player.pool.oracle_price = Some(now_price);
        println!(
            "round {n}: processed write -> last processed event {p_last:?} ({p_events} events); \
             confirmed status -> last confirmed event {c_last:?} ({c_events}); \
             dead status -> last correction {d_last:?} ({d_events})"
        );
        to_processed.push(p_last);
        to_confirmed.push(c_last);
        to_correction.push(d_last);
    }
    if to_processed.is_empty() {
        return;
    }
    let (p50, p99) = p50_p99(&mut to_processed);
    let (c50, c99) = p50_p99(&mut to_confirmed);
    let (d50, d99) = p50_p99(&mut to_correction);
    println!(
        "processed write -> last processed event: median {p50:?} (p99 {p99:?}); \
         confirming status -> last confirmed event: median {c50:?} (p99 {c99:?}); ratio {:.2}",
        p50.as_secs_f64() / c50.as_secs_f64()
    );
    println!("dead status -> last correction event: median {d50:?} (p99 {d99:?})");
}
