//! A small deterministic market for tests, here and in the crates that render
//! from the engine (the `sample` feature): four pools, owners built from one
//! seed.

use crate::{Engine, PoolState, PositionState};
use lendex_domain::liquidation::LiquidationTerms;
use lendex_domain::pubkey::Pubkey;
use lendex_domain::rates::RateModel;
use lendex_domain::wad::{PoolPricing, PositionAmounts, WAD};

pub const POOLS: usize = 4;
pub const OWNERS: u8 = 12;

pub fn pool_key(i: usize) -> Pubkey {
    Pubkey::new_from_array([200 + i as u8; 32])
}

pub fn owner_key(i: u8) -> Pubkey {
    let mut k = [0u8; 32];
    k[0] = i;
    Pubkey::new_from_array(k)
}

pub fn position_key(owner: u8, pool: usize) -> Pubkey {
    let mut k = [1u8; 32];
    k[0] = owner;
    k[1] = pool as u8;
    Pubkey::new_from_array(k)
}

/// The rate model every sample pool has: 1% base, 80% optimum, 10% / 100% slopes.
pub fn rate_model() -> RateModel {
    RateModel {
        base_rate_wad: WAD / 100,
        optimal_util_wad: 80 * WAD / 100,
        slope1_wad: WAD / 10,
        slope2_wad: WAD,
        reserve_factor_wad: WAD / 10,
    }
}

/// The liquidation terms every sample pool has: close factor 50%, bonus 5%,
/// protocol fee 1%, oracle confidence 1,000.
pub fn liquidation_terms() -> LiquidationTerms {
    LiquidationTerms {
        close_factor_wad: WAD / 2,
        liquidation_bonus_wad: WAD / 20,
        protocol_liq_fee_wad: WAD / 100,
        oracle_conf: Some(1_000),
    }
}

pub fn pool_state(i: usize, price: Option<i64>) -> PoolState {
    PoolState {
        address: pool_key(i),
        symbol: Some(format!("T{i}")),
        pricing: PoolPricing {
            oracle_price: price,
            oracle_expo: Some(-6),
            decimals: [6, 9, 0, 12][i],
            liquidation_threshold_wad: 80 * WAD / 100,
            deposit_index_wad: WAD + (i as u128) * WAD / 50,
            borrow_index_wad: WAD + (i as u128) * WAD / 20,
        },
        rates: rate_model(),
        total_deposits: 1_000,
        total_borrows: 500,
        last_update_ts: 0,
        terms: liquidation_terms(),
        slot: 0,
        feed: None,
        crank: false,
    }
}

pub fn position(owner: u8, pool: usize, deposit: u64, borrow: u64, t: i64) -> PositionState {
    PositionState {
        address: position_key(owner, pool),
        pool: pool_key(pool),
        amounts: PositionAmounts {
            deposit_shares: deposit,
            borrow_principal: borrow,
            borrow_idx_snap: WAD,
        },
        deposit_idx_snap: WAD,
        original_deposit: deposit,
        synced_us: t,
        slot: 0,
    }
}

/// A deterministic market of `owners` owners over the four pools (two of them
/// freshly priced at t = 1.7e9, two stale), a good share of them under water
/// with quotes: for tests of what is rendered from the engine.
pub fn sample_market(owners: u8) -> (Engine, Vec<Pubkey>) {
    let mut engine = Engine::new(usize::MAX);
    for i in 0..POOLS {
        let mut pool = pool_state(i, Some([400_000, 1_000_000, 2_500_000, 3_000][i]));
        pool.last_update_ts = if i < 2 { 1_700_000_000 - 10 } else { 0 };
        engine.upsert_pool(pool);
    }
    let mut seed = 0x5eed_u64;
    let mut next = |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let mut keys = Vec::new();
    for o in 0..owners {
        let mut held = Vec::new();
        for p in 0..POOLS {
            if next(3) > 0 {
                let deposit = next(3_000);
                let borrow = if next(2) == 0 { next(3_000) } else { 0 };
                held.push(position(o, p, deposit, borrow, 1));
            }
        }
        engine.set_owner(owner_key(o), held);
        keys.push(owner_key(o));
    }
    (engine, keys)
}
