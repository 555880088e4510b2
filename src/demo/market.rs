//! The demo market's shape: its tokens, the fixed keys everything is derived
//! from, and a pool account as the demo writes it on chain.

use ed25519_dalek::SigningKey;
use rand::{Rng, SeedableRng, rngs::StdRng};
use sha2::{Digest, Sha256};

use crate::domain::accounts::*;
use crate::domain::pubkey::Pubkey;
use crate::domain::wad::WAD;

pub(super) struct Token {
    pub symbol: &'static str,
    pub decimals: u8,
    /// Oracle price and exponent: USD price = price x 10^expo.
    pub price: i64,
    pub expo: i32,
    /// Liquidation threshold in percent.
    pub threshold: u128,
}

/// The demo's pools, all registered by `lendex demo`.
pub(super) const TOKENS: &[Token] = &[
    Token {
        symbol: "USDC",
        decimals: 6,
        price: 100_000_000,
        expo: -8,
        threshold: 90,
    },
    Token {
        symbol: "USDT",
        decimals: 6,
        price: 99_980_000,
        expo: -8,
        threshold: 88,
    },
    Token {
        symbol: "WBTC",
        decimals: 8,
        price: 6_000_000_000_000,
        expo: -8,
        threshold: 80,
    },
    Token {
        symbol: "SOL",
        decimals: 9,
        price: 150_000_000,
        expo: -6,
        threshold: 80,
    },
    Token {
        symbol: "ETH",
        decimals: 8,
        price: 320_000,
        expo: -2,
        threshold: 82,
    },
    Token {
        symbol: "JUP",
        decimals: 6,
        price: 85_000,
        expo: -5,
        threshold: 65,
    },
    Token {
        symbol: "BONK",
        decimals: 5,
        price: 2_500,
        expo: -8,
        threshold: 50,
    },
    Token {
        symbol: "mSOL",
        decimals: 9,
        price: 180_000_000,
        expo: -6,
        threshold: 75,
    },
];

pub(super) fn derived_key(label: &str) -> Pubkey {
    Pubkey::new_from_array(Sha256::digest(format!("lendex demo {label}").as_bytes()).into())
}

/// The demo authority: a fixed, public key. Never use it outside localnet.
pub(super) fn demo_authority() -> SigningKey {
    SigningKey::from_bytes(&Sha256::digest(b"lendex demo authority").into())
}

/// Token amount (in base units) worth `usd` dollars.
pub(super) fn amount_for_usd(token: &Token, usd: f64) -> u64 {
    let price = token.price as f64 * 10f64.powi(token.expo);
    (usd / price * 10f64.powi(token.decimals as i32)) as u64
}

/// A pool the demo puts on chain and leaves unregistered, for a newcomer to
/// register with `lendex remote register-pool` and the demo authority's key.
pub(super) const UNREGISTERED: Token = Token {
    symbol: "RAY",
    decimals: 6,
    price: 210_000_000,
    expo: -8,
    threshold: 70,
};

/// A token's mint and its pool's address.
pub(super) fn mint_and_pool(program: &Pubkey, token: &Token) -> (Pubkey, Pubkey) {
    let mint = derived_key(&format!("mint {}", token.symbol));
    (mint, pool_address(program, &mint).0)
}

/// Deposit and borrow indexes of every demo pool.
pub(super) const DEPOSIT_INDEX: u128 = 102 * WAD / 100;
pub(super) const BORROW_INDEX: u128 = 105 * WAD / 100;

/// A demo pool's account: `totals` are (deposits, borrows, deposit shares).
pub(super) fn pool_account(
    program: &Pubkey,
    authority: &Pubkey,
    token: &Token,
    totals: (u64, u64, u64),
    now: i64,
) -> LendingPool {
    let (mint, pool_key) = mint_and_pool(program, token);
    let (vault, vault_bump) = vault_address(program, &pool_key);
    let (_, authority_bump) = authority_address(program, &pool_key);
    LendingPool {
        authority: *authority,
        token_mint: mint,
        vault,
        pool_bump: pool_address(program, &mint).1,
        authority_bump,
        vault_bump,
        paused: false,
        total_deposits: totals.0.max(totals.1),
        total_borrows: totals.1,
        accumulated_fees: totals.1 / 200,
        total_deposit_shares: totals.2,
        deposit_index_wad: DEPOSIT_INDEX,
        borrow_index_wad: BORROW_INDEX,
        last_update_ts: now,
        ltv_wad: (token.threshold - 5) * WAD / 100,
        liquidation_threshold_wad: token.threshold * WAD / 100,
        liquidation_bonus_wad: 5 * WAD / 100,
        protocol_liq_fee_wad: WAD / 100,
        reserve_factor_wad: 10 * WAD / 100,
        close_factor_wad: 50 * WAD / 100,
        base_rate_wad: WAD / 100,
        optimal_util_wad: 80 * WAD / 100,
        slope1_wad: 4 * WAD / 100,
        slope2_wad: 60 * WAD / 100,
        flash_fee_bps: 9,
        pyth_price_feed: Some(derived_key(&format!("feed {}", token.symbol))),
        oracle_price: Some(token.price),
        oracle_conf: Some(token.price.unsigned_abs() / 1000),
        oracle_expo: Some(token.expo),
    }
}

/// The demo's positions, from a fixed seed: (address, position) of `owners`
/// owners, each pool's totals (deposits, borrows, deposit shares), and how
/// many owners borrowed past their limit.
pub(super) struct Book {
    pub positions: Vec<(Pubkey, UserPosition)>,
    pub totals: Vec<(u64, u64, u64)>,
    pub underwater: usize,
}

pub(super) fn book(program: &Pubkey, owners: usize) -> Book {
    let mut rng = StdRng::seed_from_u64(0x1e4de);
    let pools: Vec<Pubkey> = TOKENS.iter().map(|t| mint_and_pool(program, t).1).collect();
    let mut book = Book {
        positions: Vec::new(),
        totals: vec![(0, 0, 0); TOKENS.len()],
        underwater: 0,
    };
    for i in 0..owners {
        let owner = derived_key(&format!("owner {i}"));
        let mut order: Vec<usize> = (0..TOKENS.len()).collect();
        for j in (1..order.len()).rev() {
            order.swap(j, rng.gen_range(0..=j));
        }
        let n_collateral = rng.gen_range(1..=4);
        let n_debt = rng.gen_range(0..=3).min(TOKENS.len() - n_collateral);
        // 4% of owners borrow past their liquidation limit.
        let sinks = rng.gen_bool(0.04);
        let mut limit_usd = 0.0;
        let mut entries: Vec<(usize, u64, u64)> = Vec::new();
        for &p in &order[..n_collateral] {
            let usd = rng.gen_range(100.0..50_000.0);
            limit_usd += usd * TOKENS[p].threshold as f64 / 100.0;
            let tokens = amount_for_usd(&TOKENS[p], usd);
            let shares = (tokens as u128 * WAD / DEPOSIT_INDEX) as u64;
            entries.push((p, shares, 0));
        }
        if n_debt > 0 {
            let used = if sinks {
                rng.gen_range(1.05..1.4)
            } else {
                rng.gen_range(0.1..0.85)
            };
            let per_debt = limit_usd * used / n_debt as f64;
            for &p in &order[n_collateral..n_collateral + n_debt] {
                // Debt grows by borrow_index / snapshot (1.05): borrow the principal that becomes per_debt.
                let principal = (amount_for_usd(&TOKENS[p], per_debt) as f64 / 1.05) as u64;
                entries.push((p, 0, principal.max(1)));
            }
            if sinks {
                book.underwater += 1;
            }
        }
        for (p, shares, principal) in entries {
            let (address, bump) = position_address(program, &pools[p], &owner);
            let deposit_tokens = (shares as u128 * DEPOSIT_INDEX / WAD) as u64;
            book.totals[p].0 += deposit_tokens;
            book.totals[p].1 += principal;
            book.totals[p].2 += shares;
            book.positions.push((
                address,
                UserPosition {
                    owner,
                    pool: pools[p],
                    deposit_shares: shares,
                    borrow_principal: principal,
                    deposit_idx_snap: WAD,
                    borrow_idx_snap: WAD,
                    original_deposit: deposit_tokens,
                    bump,
                },
            ));
        }
    }
    book
}
