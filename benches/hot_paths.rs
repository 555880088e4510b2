//! Criterion benches of the hot paths: the account health factor (1, 5 and 20
//! positions), the health engine re-scoring every owner of one pool at 100k
//! positions (what a price change costs), account decoding, and the ed25519 check
//! of a signed handshake. Run: cargo bench --bench hot_paths

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ed25519_dalek::{Signer, SigningKey};
use lendex::domain::accounts::*;
use lendex::domain::auth_message::canonical_message;
use lendex::domain::pubkey::Pubkey;
use lendex::domain::risk::{Sums, position_values};
use lendex::domain::wad::*;
use lendex::engine::risk::{curve, shock};
use lendex::engine::sample::{liquidation_terms, rate_model};
use lendex::engine::{Engine, PoolState, PositionState};
use lendex::http::signed::{Credentials, verify_signature};

fn pool(price: i64, expo: i32, decimals: u8) -> PoolPricing {
    PoolPricing {
        oracle_price: Some(price),
        oracle_expo: Some(expo),
        decimals,
        liquidation_threshold_wad: 80 * WAD / 100,
        deposit_index_wad: 102 * WAD / 100,
        borrow_index_wad: 105 * WAD / 100,
    }
}

fn position(i: u64) -> PositionAmounts {
    PositionAmounts {
        deposit_shares: 1_000_000_000 + i * 7_919,
        borrow_principal: if i.is_multiple_of(2) {
            0
        } else {
            400_000_000 + i * 104_729
        },
        borrow_idx_snap: WAD + u128::from(i) * 1_000_000_007,
    }
}

fn health_factor(c: &mut Criterion) {
    let pools: Vec<PoolPricing> = (0..20)
        .map(|i| pool(100_000_000 + i * 1_000_000, -8, [6, 8, 9][i as usize % 3]))
        .collect();
    let positions: Vec<PositionAmounts> = (0..20).map(position).collect();
    for n in [1usize, 5, 20] {
        c.bench_function(&format!("account_health_factor/{n}_positions"), |b| {
            b.iter(|| {
                account_health_factor(black_box(pools[..n].iter().zip(positions[..n].iter())))
            })
        });
    }
}

fn pool_state(i: u8, price: i64) -> PoolState {
    PoolState {
        address: Pubkey::new_from_array([i; 32]),
        symbol: None,
        pricing: pool(price, -8, [6, 8, 9][i as usize % 3]),
        rates: rate_model(),
        total_deposits: 1_000_000,
        total_borrows: 500_000,
        last_update_ts: 0,
        terms: liquidation_terms(),
        slot: 0,
        feed: None,
        crank: false,
    }
}

/// An engine of 100k positions over 25k owners (4 each, every owner in pool 0).
fn market_100k() -> Engine {
    let mut engine = Engine::new(1_000_000);
    for i in 0..10u8 {
        engine.upsert_pool(pool_state(i, 100_000_000 + i64::from(i) * 3));
    }
    for o in 0..25_000u64 {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&o.to_le_bytes());
        key[31] = 1;
        let owner = Pubkey::new_from_array(key);
        let positions = (0..4u64)
            .map(|k| {
                let pool = if k == 0 { 0 } else { ((o + k) % 9 + 1) as u8 };
                let mut address = key;
                address[30] = k as u8 + 1;
                PositionState {
                    address: Pubkey::new_from_array(address),
                    pool: Pubkey::new_from_array([pool; 32]),
                    amounts: position(o * 4 + k),
                    deposit_idx_snap: WAD,
                    original_deposit: 1,
                    synced_us: 0,
                    slot: 0,
                }
            })
            .collect();
        engine.set_owner(owner, positions);
    }
    engine
}

/// The health engine itself at 100k positions over 25k owners: a price move on
/// pool 0 re-scores all 25k owners, files the ones that cross 1 WAD and marks
/// every changed value for write-back.
fn rescore_pool(c: &mut Criterion) {
    let mut engine = market_100k();
    let mut group = c.benchmark_group("rescore_pool");
    group.sample_size(20);
    let mut tick = 0i64;
    group.bench_function("engine_100k_positions_25k_owners", |b| {
        b.iter(|| {
            // Alternate between two prices so every iteration is a real re-price.
            tick += 1;
            engine.upsert_pool(pool_state(0, 100_000_000 + (tick % 2) * 40_000_000));
            black_box(engine.take_dirty().len())
        })
    });
    group.finish();
}

/// A book as a risk team sees it: 100k positions over 25k owners, 10 pools of
/// one price and decimals; each owner has collateral in pool 0 and another
/// pool and debt in two more, its health factor spread from 1.05 to 3.04, and
/// 1% under water (0.99).
fn book_100k() -> Engine {
    let mut engine = Engine::new(1_000_000);
    for i in 0..10u8 {
        let mut state = pool_state(i, 100_000_000);
        state.pricing = pool(100_000_000, -8, 6);
        state.pricing.deposit_index_wad = WAD;
        state.pricing.borrow_index_wad = WAD;
        engine.upsert_pool(state);
    }
    for o in 0..25_000u64 {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&o.to_le_bytes());
        key[31] = 2;
        let owner = Pubkey::new_from_array(key);
        let deposit = 1_000_000_000 + o * 7_919;
        let hf_percent = if o.is_multiple_of(100) {
            99
        } else {
            105 + o % 200
        };
        // 2 deposits x 0.8 threshold / health factor, over two debts.
        let debt = deposit * 2 * 80 / hf_percent / 2;
        let held = [
            (0u8, deposit, 0),
            ((o % 3 + 1) as u8, deposit, 0),
            ((o % 3 + 4) as u8, 0, debt),
            ((o % 3 + 7) as u8, 0, debt),
        ];
        let positions = held
            .iter()
            .enumerate()
            .map(|(k, (pool, d, b))| {
                let mut address = key;
                address[30] = k as u8 + 1;
                PositionState {
                    address: Pubkey::new_from_array(address),
                    pool: Pubkey::new_from_array([*pool; 32]),
                    amounts: PositionAmounts {
                        deposit_shares: *d,
                        borrow_principal: *b,
                        borrow_idx_snap: WAD,
                    },
                    deposit_idx_snap: WAD,
                    original_deposit: *d,
                    synced_us: 0,
                    slot: 0,
                }
            })
            .collect();
        engine.set_owner(owner, positions);
    }
    engine
}

/// The risk lens (docs/design.md §10): the per-owner kernel (an owner's four
/// positions valued at a shocked price), and over `book_100k` a shock of
/// pool 0 (every owner's collateral) and its 50-step curve.
fn risk_lens(c: &mut Criterion) {
    let pools: Vec<PoolPricing> = (0..4)
        .map(|i| pool(100_000_000 + i, -8, [6, 8, 9, 9][i as usize]))
        .collect();
    let amounts: Vec<PositionAmounts> = (0..4).map(position).collect();
    c.bench_function("risk/owner_kernel_4_positions", |b| {
        b.iter(|| {
            let mut sums = Sums::default();
            for (pool, p) in pools.iter().zip(&amounts) {
                sums.add(position_values(pool, p, black_box(Some(90_000_000)), -8));
            }
            black_box(sums.liquidatable())
        })
    });
    let engine = book_100k();
    let pool0 = Pubkey::new_from_array([0; 32]);
    let mut group = c.benchmark_group("risk_100k_positions_25k_owners");
    group.sample_size(20);
    // Each owner under water after the shock has its best quote worked out
    // (the profit on offer): that is most of a shock's cost.
    for bps in [-1_000i64, -2_000] {
        group.bench_function(format!("shock_one_pool_{bps}_bps"), |b| {
            b.iter(|| {
                black_box(
                    shock(&engine, &[(pool0, bps)], 50)
                        .unwrap()
                        .liquidatable_after,
                )
            })
        });
    }
    group.bench_function("curve_50_steps", |b| {
        b.iter(|| black_box(curve(&engine, &pool0, -5_000, 0, 50).unwrap().points.len()))
    });
    group.finish();
}

fn decoding(c: &mut Criterion) {
    let program = Pubkey::new_unique();
    let mint = Pubkey::new_unique();
    let (address, bump) = pool_address(&program, &mint);
    let pool = LendingPool {
        authority: Pubkey::new_unique(),
        token_mint: mint,
        vault: Pubkey::new_unique(),
        pool_bump: bump,
        authority_bump: 254,
        vault_bump: 253,
        paused: false,
        total_deposits: u64::MAX / 3,
        total_borrows: u64::MAX / 5,
        accumulated_fees: 12345,
        total_deposit_shares: u64::MAX / 3,
        deposit_index_wad: WAD,
        borrow_index_wad: WAD,
        last_update_ts: 1_700_000_000,
        ltv_wad: WAD,
        liquidation_threshold_wad: WAD,
        liquidation_bonus_wad: WAD,
        protocol_liq_fee_wad: WAD,
        reserve_factor_wad: WAD,
        close_factor_wad: WAD,
        base_rate_wad: WAD,
        optimal_util_wad: WAD,
        slope1_wad: WAD,
        slope2_wad: WAD,
        flash_fee_bps: 9,
        pyth_price_feed: Some(Pubkey::new_unique()),
        oracle_price: Some(100_000_000),
        oracle_conf: Some(1000),
        oracle_expo: Some(-8),
    };
    let pool_bytes = encode_pool(&pool);
    let position = UserPosition {
        owner: Pubkey::new_unique(),
        pool: address,
        deposit_shares: 1,
        borrow_principal: 2,
        deposit_idx_snap: WAD,
        borrow_idx_snap: WAD,
        original_deposit: 1,
        bump: 255,
    };
    let position_bytes = encode_position(&position);
    c.bench_function("decode/lending_pool", |b| {
        b.iter(|| decode_pool(black_box(&pool_bytes)).unwrap())
    });
    c.bench_function("decode/user_position", |b| {
        b.iter(|| decode_position(black_box(&position_bytes)).unwrap())
    });
}

fn handshake_verify(c: &mut Criterion) {
    let key = SigningKey::from_bytes(&[42u8; 32]);
    let actor = bs58::encode(key.verifying_key().as_bytes()).into_string();
    let nonce = "00112233445566778899aabbccddeeff";
    let action = format!("add_admin:{actor}:pool_admin");
    let signature = bs58::encode(
        key.sign(canonical_message(&action, nonce).as_bytes())
            .to_bytes(),
    )
    .into_string();
    let creds = Credentials {
        actor: &actor,
        nonce,
        signature: &signature,
    };
    c.bench_function("ed25519/verify_handshake_message", |b| {
        b.iter(|| verify_signature(black_box(&creds), black_box(&action)).unwrap())
    });
}

criterion_group!(
    benches,
    health_factor,
    rescore_pool,
    risk_lens,
    decoding,
    handshake_verify
);
criterion_main!(benches);
