//! The synthetic market both seeds build (PostgreSQL by COPY, or the chain by
//! `surfnet_setAccount`): the same pools, owners and amounts from the same seed,
//! so figures from the two paths describe one market.
//!
//! Pool `i` trades at $(1 + i) (price 10^8 (1 + i), exponent -8) with decimals
//! 6, 8 or 9. Every owner deposits $1,000 in pool 0 (so a pool-0 price change
//! re-scores every owner) and a little in other pools, and borrows $300
//! (healthy) or $1,000 (under water at a 0.8 threshold) in one more.

use rand::{Rng, SeedableRng, rngs::StdRng};

pub fn pool_price(i: usize) -> i64 {
    100_000_000 * (1 + i as i64)
}

pub fn decimals(i: usize) -> u8 {
    [6u8, 8, 9][i % 3]
}

/// One position of an owner: pool index, deposit shares, borrow principal.
pub struct Entry {
    pub pool: usize,
    pub shares: u64,
    pub principal: u64,
}

/// Every owner's positions, and how many owners borrow past their limit.
pub struct Market {
    pub owners: Vec<Vec<Entry>>,
    pub sunk: usize,
}

pub fn build(shape: &crate::MarketArgs) -> Market {
    let (pools, owners, per_owner, underwater) = (
        shape.pools,
        shape.owners,
        shape.positions_per_owner,
        shape.underwater,
    );
    assert!(pools >= 2, "the market needs pool 0 and at least one more");
    let mut rng = StdRng::seed_from_u64(7);
    let mut sunk = 0;
    let owners = (0..owners)
        .map(|o| {
            let sinks = rng.gen_bool(underwater);
            sunk += usize::from(sinks);
            owner_entries(o, pools, per_owner, sinks)
        })
        .collect();
    Market { owners, sunk }
}

fn owner_entries(o: usize, pools: usize, per_owner: usize, sinks: bool) -> Vec<Entry> {
    let debt_pool = 1 + o % (pools - 1);
    let mut usd = vec![(0usize, 1000.0, 0.0)];
    for k in 0..per_owner.saturating_sub(2) {
        let p = 1 + (o + 1 + k) % (pools - 1);
        if p != debt_pool {
            usd.push((p, 10.0, 0.0));
        }
    }
    usd.push((debt_pool, 0.0, if sinks { 1000.0 } else { 300.0 }));
    while usd.len() < per_owner {
        // Fill with a pool not used yet (one position per pool per owner).
        let used: Vec<usize> = usd.iter().map(|e| e.0).collect();
        match (1..pools).find(|p| !used.contains(p)) {
            Some(p) => usd.push((p, 5.0, 0.0)),
            None => break,
        }
    }
    usd.into_iter()
        .map(|(pool, deposit_usd, debt_usd)| {
            let unit = 10f64.powi(decimals(pool) as i32) / (1.0 + pool as f64); // base units per $1
            Entry {
                pool,
                shares: (deposit_usd * unit) as u64,
                principal: (debt_usd * unit) as u64,
            }
        })
        .collect()
}

/// Registers pool `i` in PostgreSQL as of slot `slot` (the chain seed uses 0,
/// so the service's first reconcile brings it up to date).
pub async fn insert_pool(
    db: &tokio_postgres::Client,
    i: usize,
    keys: [&str; 4], // address, mint, authority, vault
    slot: i64,
) {
    let [address, mint, authority, vault] = keys;
    let now = chrono::Utc::now().timestamp();
    db.execute(
        "INSERT INTO pools (cluster, pool_address, token_mint, symbol, authority, vault, pool_bump, authority_bump,
            vault_bump, decimals, paused, total_deposits, total_borrows, accumulated_fees, total_deposit_shares,
            deposit_index_wad, borrow_index_wad, last_update_ts, ltv_wad, liquidation_threshold_wad,
            liquidation_bonus_wad, protocol_liq_fee_wad, reserve_factor_wad, close_factor_wad, base_rate_wad,
            optimal_util_wad, slope1_wad, slope2_wad, flash_fee_bps, oracle_price, oracle_conf, oracle_expo,
            created_by, init_signature, slot)
         VALUES ('localnet', $1, $2, $3, $4, $5, 255, 254, 253, $6, false, 1000000000000, 500000000000, 0,
            1000000000000, 1000000000000000000, 1000000000000000000, $7, 750000000000000000, 800000000000000000,
            50000000000000000, 10000000000000000, 100000000000000000, 500000000000000000, 20000000000000000,
            800000000000000000, 40000000000000000, 750000000000000000, 9, $8, 1000, -8, 'loadgen', 'loadgen', $9)",
        &[&address, &mint, &format!("P{i}"), &authority, &vault, &(decimals(i) as i16), &now, &pool_price(i), &slot],
    )
    .await
    .unwrap();
}

/// Pool `i`'s account as `insert_pool` registers it (at `price`): what a
/// played slot writes over gRPC for a market seeded in PostgreSQL, and the
/// terms the chain seed writes.
pub fn pool_account(i: usize, price: i64) -> lendex::domain::accounts::LendingPool {
    use lendex::domain::wad::WAD;
    let key = |name: &str| crate::key(name).parse().expect("a key");
    lendex::domain::accounts::LendingPool {
        authority: key("load authority"),
        token_mint: key(&format!("load mint {i}")),
        vault: key(&format!("load vault {i}")),
        pool_bump: 255,
        authority_bump: 254,
        vault_bump: 253,
        paused: false,
        total_deposits: 1_000_000_000_000,
        total_borrows: 500_000_000_000,
        accumulated_fees: 0,
        total_deposit_shares: 1_000_000_000_000,
        deposit_index_wad: WAD,
        borrow_index_wad: WAD,
        last_update_ts: chrono::Utc::now().timestamp(),
        ltv_wad: 75 * WAD / 100,
        liquidation_threshold_wad: 80 * WAD / 100,
        liquidation_bonus_wad: 5 * WAD / 100,
        protocol_liq_fee_wad: WAD / 100,
        reserve_factor_wad: WAD / 10,
        close_factor_wad: WAD / 2,
        base_rate_wad: 2 * WAD / 100,
        optimal_util_wad: 80 * WAD / 100,
        slope1_wad: 4 * WAD / 100,
        slope2_wad: 75 * WAD / 100,
        flash_fee_bps: 9,
        pyth_price_feed: None,
        oracle_price: Some(price),
        oracle_conf: Some(1000),
        oracle_expo: Some(-8),
    }
}

/// Sets pool 0's price in PostgreSQL, as the chain sync would, and returns
/// the feed tick the change commits at (the tick of its events).
pub async fn move_pool_0(db: &mut tokio_postgres::Client, price: i64) -> u64 {
    let tx = db.transaction().await.unwrap();
    tx.execute(
        "UPDATE pools SET oracle_price = $1 WHERE cluster = 'localnet' AND pool_address = $2",
        &[&price, &crate::key("load pool 0")],
    )
    .await
    .unwrap();
    let tick: i64 = tx
        .query_one("SELECT lendex_feed_tick()", &[])
        .await
        .unwrap()
        .get(0);
    tx.commit().await.unwrap();
    tick as u64
}
