//! `lendex demo --walk`: keeps the demo's oracles alive. Every few seconds
//! each registered pool's price takes a step of a random walk that leans back
//! to its demo price (within 15% of it), and its on-chain last update moves to
//! now, written to the local chain as an oracle update would be. The service
//! hears it over the websocket: quotes stay fresh, and owners near their limit
//! go under and recover in the feed and the console.

use std::time::Duration;

use rand::{Rng, SeedableRng, rngs::StdRng};
use solana_rpc_client::nonblocking::rpc_client::RpcClient;

use super::market::{TOKENS, mint_and_pool};
use crate::chain::rpc::surfnet_set_account;
use crate::config::Config;
use crate::domain::accounts::{decode_pool, encode_pool};
use crate::domain::pubkey::Pubkey;
use crate::error::CliResult;

/// How often the prices move.
const EVERY: Duration = Duration::from_secs(3);
/// How far from its demo price a price may wander (a stablecoin: 1%).
const BAND: f64 = 0.15;
const STABLE_BAND: f64 = 0.01;

/// The next level of a price (1.0 = its demo price): a step of `noise`, a
/// tenth of the way back towards 1, kept within `band` of it.
pub fn step(level: f64, noise: f64, band: f64) -> f64 {
    let next = level + (1.0 - level) * 0.1 + noise;
    next.clamp(1.0 - band, 1.0 + band)
}

/// Walks until stopped; a round that fails (the chain restarting) is retried.
pub async fn walk(config: &Config, program: &Pubkey) -> CliResult {
    let chain = RpcClient::new(config.rpc.url.clone());
    let mut rng = StdRng::from_entropy();
    let mut levels = vec![1.0; TOKENS.len()];
    println!(
        "walking the demo's oracle prices every {}s (within {}% of their demo prices, {}% for stablecoins)",
        EVERY.as_secs(),
        BAND * 100.0,
        STABLE_BAND * 100.0
    );
    let pools: Vec<Pubkey> = TOKENS.iter().map(|t| mint_and_pool(program, t).1).collect();
    loop {
        tokio::time::sleep(EVERY).await;
        let now = chrono::Utc::now().timestamp();
        // Every pool read at once, then every price written back to back: a
        // market's move lands in one slot, and the service applies a slot's
        // writes together (no account flaps through states that never were).
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
            let pool_key = pools[i];
            // Read back, so totals and indexes the chain moved are kept.
            let Some(account) = account else {
                continue;
            };
            let Ok(mut pool) = decode_pool(&account.data) else {
                continue;
            };
            let price = (token.price as f64 * levels[i]).round() as i64;
            pool.oracle_price = Some(price.max(1));
            pool.oracle_conf = Some(price.unsigned_abs() / 1000);
            pool.last_update_ts = now;
            if let Err(e) = surfnet_set_account(
                &chain,
                &pool_key,
                program,
                account.lamports,
                &encode_pool(&pool),
            )
            .await
            {
                tracing::warn!(error = %e, pool = token.symbol, "demo price not written");
            }
        }
    }
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
    fn with_no_noise_a_price_returns_towards_its_demo_price() {
        let (mut high, mut low) = (1.0 + BAND, 1.0 - BAND);
        for _ in 0..50 {
            (high, low) = (step(high, 0.0, BAND), step(low, 0.0, BAND));
        }
        assert!((high - 1.0).abs() < 0.01 && (low - 1.0).abs() < 0.01);
    }
}
