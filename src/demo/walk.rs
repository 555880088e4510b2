//! `lendex demo --walk`: keeps the demo's oracles alive. Every few seconds
//! each pool's Pyth feed (a `PriceUpdateV2` at the address the pool names)
//! takes a step of a random walk that leans back to its demo price (within
//! 15% of it), published now. A keeper cranks a pool (copies its feed into
//! the pool, as UpdateOraclePrice would) when the feed is 1% off the copy or
//! the copy is 30 s old (docs/design.md §17), so the feed view visibly leads
//! the pool view. The service hears both over the websocket: owners near
//! their limit go under and recover in the feed, the stream and the console.

use std::time::Duration;

use rand::{Rng, SeedableRng, rngs::StdRng};
use solana_rpc_client::nonblocking::rpc_client::RpcClient;

use super::market::{TOKENS, mint_and_pool};
use crate::chain::rpc::surfnet_set_account;
use crate::config::Config;
use crate::domain::accounts::{decode_pool, encode_pool};
use crate::domain::pubkey::Pubkey;
use crate::domain::pyth::{PriceUpdate, deviation_bps};
use crate::error::CliResult;

/// How often the prices move.
const EVERY: Duration = Duration::from_secs(3);
/// How far from its demo price a price may wander (a stablecoin: 1%).
const BAND: f64 = 0.15;
const STABLE_BAND: f64 = 0.01;

/// A keeper cranks a pool when its feed is this far off its copy (1%)...
const CRANK_OFF_BPS: i64 = 100;
/// ...or its copy is this old.
const CRANK_AGE_SECONDS: i64 = 30;

/// Whether the keeper cranks: the feed `deviation_bps` off the copy, the
/// copy `age` seconds old.
pub fn crank_due(deviation_bps: Option<i64>, age: i64) -> bool {
    deviation_bps.is_some_and(|bps| bps.abs() >= CRANK_OFF_BPS) || age >= CRANK_AGE_SECONDS
}

/// The next level of a price (1.0 = its demo price): a step of `noise`, a
/// tenth of the way back towards 1, kept within `band` of it.
pub fn step(level: f64, noise: f64, band: f64) -> f64 {
    let next = level + (1.0 - level) * 0.1 + noise;
    next.clamp(1.0 - band, 1.0 + band)
}

/// Walks until stopped; a round that fails (the chain restarting) is retried.
pub async fn walk(config: &Config, program: &Pubkey) -> CliResult {
    let chain = RpcClient::new(config.rpc.url.clone());
    let receiver: Pubkey = config.oracle.receiver_program.parse()?;
    let mut rng = StdRng::from_entropy();
    let mut levels = vec![1.0; TOKENS.len()];
    println!(
        "walking the demo's Pyth feeds every {}s (within {}% of their demo prices, {}% for \
         stablecoins); a pool is cranked when its feed is {}% off or {}s old",
        EVERY.as_secs(),
        BAND * 100.0,
        STABLE_BAND * 100.0,
        CRANK_OFF_BPS as f64 / 100.0,
        CRANK_AGE_SECONDS
    );
    let pools: Vec<Pubkey> = TOKENS.iter().map(|t| mint_and_pool(program, t).1).collect();
    loop {
        tokio::time::sleep(EVERY).await;
        let now = chrono::Utc::now().timestamp();
        // Every pool read at once, then every account written back to back:
        // a market's move lands in one slot, and the service applies a
        // slot's writes together (no account flaps through states that never
        // were).
        let Ok(accounts) = chain.get_multiple_accounts(&pools).await else {
            continue;
        };
        for (i, (token, account)) in TOKENS.iter().zip(accounts).enumerate() {
            let band = if token.symbol.starts_with("USD") {
                STABLE_BAND
            } else {
                BAND
            };
            levels[i] = step(levels[i], rng.gen_range(-0.2..0.2) * band, band);
            // Read back, so totals and indexes the chain moved are kept.
            let Some(account) = account else {
                continue;
            };
            let Ok(mut pool) = decode_pool(&account.data) else {
                continue;
            };
            let Some(feed_key) = pool.pyth_price_feed else {
                continue;
            };
            let price = ((token.price as f64 * levels[i]).round() as i64).max(1);
            let conf = price.unsigned_abs() / 1000;
            let feed = feed_account(price, conf, token.expo, now);
            let written =
                surfnet_set_account(&chain, &feed_key, &receiver, 10_000_000, &feed).await;
            if let Err(e) = written {
                tracing::warn!(error = %e, pool = token.symbol, "demo feed not written");
                continue;
            }
            let copy = pool.oracle_price.zip(pool.oracle_expo);
            let off = copy.and_then(|copy| deviation_bps((price, token.expo), copy));
            if !crank_due(off, now.saturating_sub(pool.last_update_ts)) {
                continue;
            }
            // The crank: UpdateOraclePrice copies the feed into the pool.
            pool.oracle_price = Some(price);
            pool.oracle_conf = Some(conf);
            pool.oracle_expo = Some(token.expo);
            pool.last_update_ts = now;
            let bytes = encode_pool(&pool);
            let cranked = surfnet_set_account(&chain, &pools[i], program, account.lamports, &bytes);
            if let Err(e) = cranked.await {
                tracing::warn!(error = %e, pool = token.symbol, "demo crank not written");
            }
        }
    }
}

/// A fully verified `PriceUpdateV2` with this price, published at `now`.
fn feed_account(price: i64, conf: u64, exponent: i32, now: i64) -> Vec<u8> {
    PriceUpdate::full(price, conf, exponent, now).encode()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn prices_stay_in_the_band_and_lean_back(
            start in (1.0 - BAND)..(1.0 + BAND),
            noises in proptest::collection::vec(-0.03f64..0.03, 1..200),
        ) {
            let mut level = start;
            for noise in noises {
                let next = step(level, noise, BAND);
                prop_assert!((1.0 - BAND..=1.0 + BAND).contains(&next));
                level = next;
            }
        }
    }

    #[test]
    fn a_pool_is_cranked_one_percent_off_or_thirty_seconds_old() {
        assert!(!crank_due(Some(99), 29));
        assert!(!crank_due(Some(-99), 0));
        assert!(!crank_due(None, 29));
        assert!(crank_due(Some(100), 0));
        assert!(crank_due(Some(-100), 0));
        assert!(crank_due(Some(0), 30));
        assert!(crank_due(None, 31));
    }

    #[test]
    fn with_no_noise_a_price_returns_towards_its_demo_price() {
        let (mut high, mut low) = (1.0 + BAND, 1.0 - BAND);
        for _ in 0..50 {
            (high, low) = (step(high, 0.0, BAND), step(low, 0.0, BAND));
        }
        assert!((high - 1.0).abs() < 0.01 && (low - 1.0).abs() < 0.01);
    }
}
