//! The risk lens over the engine against a recomputation of every owner from
//! scratch (no owner skipped): random markets with unpriced pools, pools
//! holding deposits and debt, thresholds above 1 WAD, negative value
//! exponents, and shocks down to zero and up to +1000%.

use proptest::prelude::*;

use super::*;
use crate::{PoolState, PositionState};
use lendex_domain::liquidation::{LiquidationTerms, QuoteInput, best_quote};
use lendex_domain::rates::RateModel;
use lendex_domain::risk::{Sums, curve_points, position_values, shocked_price};
use lendex_domain::wad::{PoolPricing, PositionAmounts};

const POOLS: usize = 4;

fn pool_key(i: usize) -> Pubkey {
    Pubkey::new_from_array([100 + i as u8; 32])
}

#[derive(Debug, Clone)]
struct Market {
    /// (price, expo, decimals, threshold) per pool.
    pools: Vec<(Option<i64>, i32, u8, u128)>,
    /// Per owner: (pool, deposit shares, borrow principal).
    owners: Vec<Vec<(usize, u64, u64)>>,
}

fn market() -> impl Strategy<Value = Market> {
    let pool = (
        prop_oneof![4 => (1i64..5_000_000).prop_map(Some), 1 => Just(None)],
        -10i32..=2,
        0u8..=12,
        prop_oneof![4 => (WAD / 2)..=WAD, 1 => WAD..=(6 * WAD / 5)],
    );
    let owner = proptest::collection::vec((0..POOLS, 0u64..5_000_000, 0u64..5_000_000), 1..4);
    (
        proptest::collection::vec(pool, POOLS),
        proptest::collection::vec(owner, 1..30),
    )
        .prop_map(|(pools, owners)| Market { pools, owners })
}

fn engine_of(m: &Market) -> Engine {
    let mut engine = Engine::new(usize::MAX);
    for (i, (price, expo, decimals, lt)) in m.pools.iter().enumerate() {
        engine.upsert_pool(PoolState {
            address: pool_key(i),
            symbol: None,
            pricing: PoolPricing {
                oracle_price: *price,
                oracle_expo: Some(*expo),
                decimals: *decimals,
                liquidation_threshold_wad: *lt,
                deposit_index_wad: WAD + i as u128 * WAD / 10,
                borrow_index_wad: WAD + i as u128 * WAD / 7,
            },
            rates: RateModel::default(),
            total_deposits: 0,
            total_borrows: 0,
            last_update_ts: 0,
            terms: LiquidationTerms {
                close_factor_wad: WAD / 2,
                liquidation_bonus_wad: WAD / 20,
                protocol_liq_fee_wad: WAD / 100,
                oracle_conf: Some(10),
            },
            slot: 0,
            feed: None,
            crank: false,
        });
    }
    for (o, positions) in m.owners.iter().enumerate() {
        let owner = Pubkey::new_from_array([o as u8 + 1; 32]);
        let mut held: Vec<PositionState> = Vec::new();
        for (pool, deposit, borrow) in positions {
            if held.iter().any(|p| p.pool == pool_key(*pool)) {
                continue; // one position per owner and pool
            }
            let mut address = [o as u8 + 1; 32];
            address[0] = *pool as u8;
            held.push(PositionState {
                address: Pubkey::new_from_array(address),
                pool: pool_key(*pool),
                amounts: PositionAmounts {
                    deposit_shares: *deposit,
                    borrow_principal: *borrow,
                    borrow_idx_snap: WAD,
                },
                deposit_idx_snap: WAD,
                original_deposit: *deposit,
                synced_us: 0,
                slot: 0,
            });
        }
        engine.set_owner(owner, held);
    }
    engine
}

/// Every owner's sums, from scratch, with pool prices given by `price_of`.
fn sums_of(engine: &Engine, owner: &Pubkey, price_of: &dyn Fn(&Pubkey) -> Option<u128>) -> Sums {
    let view = engine.peek(owner).unwrap();
    let mut sums = Sums::default();
    for (p, pool) in &view.positions {
        let pricing = &pool.state.pricing;
        let price = pricing.price().and(price_of(&pool.state.address));
        sums.add(position_values(
            pricing,
            &p.amounts,
            price,
            pricing.oracle_expo.unwrap(),
        ));
    }
    sums
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn a_shock_equals_a_recomputation_of_every_owner(
        m in market(),
        shocked in proptest::collection::btree_map(0..POOLS, prop_oneof![
            Just(-10_000i64), Just(100_000i64), -10_000i64..=100_000], 1..3),
        limit in 1usize..10,
    ) {
        let engine = engine_of(&m);
        let shocks: Vec<(Pubkey, i64)> = shocked.iter().map(|(i, b)| (pool_key(*i), *b)).collect();
        let outcome = shock(&engine, &shocks, limit);
        if shocked.keys().any(|i| m.pools[*i].0.is_none()) {
            prop_assert_eq!(outcome.err(), Some(RiskError::Unpriced), "a shocked pool must be priced");
            return Ok(());
        }
        let outcome = outcome.unwrap();
        let now_price = |pool: &Pubkey| -> Option<u128> {
            let i = (0..POOLS).find(|i| pool_key(*i) == *pool).unwrap();
            m.pools[i].0.map(|p| p as u128)
        };
        let after_price = |pool: &Pubkey| -> Option<u128> {
            let i = (0..POOLS).find(|i| pool_key(*i) == *pool).unwrap();
            match shocked.get(&i) {
                Some(bps) => shocked_price(m.pools[i].0.unwrap(), *bps),
                None => now_price(pool),
            }
        };
        let (mut before, mut after, mut newly, mut debt, mut bad, mut profit) =
            (0u64, 0u64, Vec::new(), Big::ZERO, Big::ZERO, Big::ZERO);
        let keys: Vec<Pubkey> = engine.owners.resident().map(|o| o.key).collect();
        for key in &keys {
            let now = sums_of(&engine, key, &now_price);
            let shock = sums_of(&engine, key, &after_price);
            prop_assert_eq!(now.health_factor(), engine.health_factor(key).unwrap(), "the §3 value");
            before += u64::from(now.liquidatable());
            bad += shock.bad_debt();
            if shock.liquidatable() {
                after += 1;
                debt += shock.debt;
                // The best quote at the shocked prices, from scratch.
                let view = engine.peek(key).unwrap();
                let pricings: Vec<PoolPricing> = view.positions.iter().map(|(_, pool)| {
                    let mut pricing = pool.state.pricing;
                    if pricing.price().is_some() {
                        pricing.oracle_price = after_price(&pool.state.address)
                            .map(|p| i64::try_from(p).unwrap_or(i64::MAX));
                    }
                    pricing
                }).collect();
                let inputs: Vec<QuoteInput<'_>> = view.positions.iter().zip(&pricings).map(|((p, pool), pricing)| QuoteInput {
                    pool: &pool.state.address,
                    position: &p.address,
                    pricing,
                    terms: &pool.state.terms,
                    amounts: &p.amounts,
                }).collect();
                if let Some(q) = best_quote(&inputs, None, None) {
                    profit += q.profit_value_wad;
                }
                if !now.liquidatable() {
                    newly.push((shock.health_factor(), key.to_string(), *key));
                }
            }
        }
        newly.sort();
        prop_assert_eq!(outcome.liquidatable_before, before);
        prop_assert_eq!(outcome.liquidatable_after, after);
        prop_assert_eq!(outcome.newly_liquidatable, newly.len() as u64);
        prop_assert_eq!(outcome.debt_value_wad_liquidatable_after, debt);
        prop_assert_eq!(outcome.bad_debt_value_wad_after, bad);
        prop_assert_eq!(outcome.profit_value_wad_after, profit);
        let listed: Vec<Pubkey> = outcome.accounts.iter().map(|a| a.owner).collect();
        let expected: Vec<Pubkey> = newly.iter().take(limit).map(|(_, _, k)| *k).collect();
        prop_assert_eq!(listed, expected);
    }

    #[test]
    fn each_curve_point_is_the_shock_of_that_pool_over_its_owners(
        m in market(),
        pool in 0..POOLS,
        (from, to) in (-10_000i64..50_000).prop_flat_map(|f| (Just(f), (f + 1)..=100_000)),
        steps in 1u32..12,
    ) {
        let engine = engine_of(&m);
        let outcome = curve(&engine, &pool_key(pool), from, to, steps);
        let Some(price) = m.pools[pool].0 else {
            prop_assert_eq!(outcome.err(), Some(RiskError::Unpriced));
            return Ok(());
        };
        let outcome = outcome.unwrap();
        let members: Vec<Pubkey> = engine.owners.resident().map(|o| o.key).filter(|k| {
            engine.peek(k).unwrap().positions.iter().any(|(_, p)| p.state.address == pool_key(pool))
        }).collect();
        prop_assert_eq!(outcome.owners, members.len() as u64);
        for (point, bps) in outcome.points.iter().zip(curve_points(from, to, steps)) {
            prop_assert_eq!(point.change_bps, bps);
            let at = shocked_price(price, bps);
            prop_assert_eq!(point.price, at);
            let price_of = |p: &Pubkey| -> Option<u128> {
                if *p == pool_key(pool) { at } else {
                    let i = (0..POOLS).find(|i| pool_key(*i) == *p).unwrap();
                    m.pools[i].0.map(|x| x as u128)
                }
            };
            let (mut n, mut debt, mut bad) = (0u64, Big::ZERO, Big::ZERO);
            for key in &members {
                let sums = sums_of(&engine, key, &price_of);
                bad += sums.bad_debt();
                if sums.liquidatable() {
                    n += 1;
                    debt += sums.debt;
                }
            }
            prop_assert_eq!(point.liquidatable, n, "at {} bps", bps);
            prop_assert_eq!(point.debt_value_wad_liquidatable, debt);
            prop_assert_eq!(point.bad_debt_value_wad, bad);
        }
    }
}

#[test]
fn an_unknown_pool_is_not_found() {
    let engine = Engine::new(10);
    assert_eq!(
        shock(&engine, &[(pool_key(0), -100)], 5).err(),
        Some(RiskError::UnknownPool)
    );
    assert_eq!(
        curve(&engine, &pool_key(0), -100, 0, 5).err(),
        Some(RiskError::UnknownPool)
    );
}

/// Enough owners that a shock and a curve are shared out over the cores: the
/// merged answer equals the one-core recomputation.
#[test]
fn shared_out_over_the_cores_the_answers_are_the_same() {
    let m = Market {
        pools: vec![
            (Some(1_000_000), -6, 6, 8 * WAD / 10),
            (Some(1_000_000), -6, 6, 8 * WAD / 10),
            (Some(100_000_000), -8, 6, 9 * WAD / 10),
            (None, -6, 6, WAD / 2),
        ],
        owners: (0..250u64)
            .map(|o| {
                vec![
                    ((o % 3) as usize, 1_000_000 + o * 977, 0),
                    ((o % 3 + 1) as usize % 3, 0, 300_000 + o * 1_733),
                ]
            })
            .collect(),
    };
    // 250 owners per key space (the market builds one key per index): grow it
    // by renaming, so there are 2,000.
    let mut engine = engine_of(&m);
    for copy in 1..8u8 {
        for (o, positions) in m.owners.iter().enumerate() {
            let mut key = [o as u8 + 1; 32];
            key[0] = 0xff;
            key[1] = copy;
            let held: Vec<PositionState> = positions
                .iter()
                .map(|(pool, deposit, borrow)| {
                    let mut address = key;
                    address[0] = *pool as u8;
                    address[30] = 0xee;
                    PositionState {
                        address: Pubkey::new_from_array(address),
                        pool: pool_key(*pool),
                        amounts: PositionAmounts {
                            deposit_shares: *deposit,
                            borrow_principal: *borrow,
                            borrow_idx_snap: WAD,
                        },
                        deposit_idx_snap: WAD,
                        original_deposit: *deposit,
                        synced_us: 0,
                        slot: 0,
                    }
                })
                .collect();
            engine.set_owner(Pubkey::new_from_array(key), held);
        }
    }
    assert!(engine.owner_count() >= 2_000);
    let shock = shock(&engine, &[(pool_key(1), 25_000)], 20).unwrap();
    let (mut after, mut newly, mut debt, mut bad) = (0u64, 0u64, Big::ZERO, Big::ZERO);
    let after_price = |p: &Pubkey| -> Option<u128> {
        let i = (0..POOLS).find(|i| pool_key(*i) == *p).unwrap();
        let price = m.pools[i].0?;
        if i == 1 {
            shocked_price(price, 25_000)
        } else {
            Some(price as u128)
        }
    };
    let keys: Vec<Pubkey> = engine.owners.resident().map(|o| o.key).collect();
    for key in &keys {
        let sums = sums_of(&engine, key, &after_price);
        bad += sums.bad_debt();
        if sums.liquidatable() {
            after += 1;
            debt += sums.debt;
            newly += u64::from(engine.health_factor(key).unwrap() >= WAD);
        }
    }
    assert!(
        newly > 100,
        "{newly} newly under water: the shock must bite"
    );
    assert_eq!(shock.newly_liquidatable, newly);
    assert_eq!(shock.liquidatable_after, after);
    assert_eq!(shock.debt_value_wad_liquidatable_after, debt);
    assert_eq!(shock.bad_debt_value_wad_after, bad);
    assert_eq!(shock.accounts.len(), 20);
    let curve = curve(&engine, &pool_key(1), 0, 5_000, 4).unwrap();
    let last = curve.points.last().unwrap();
    let mut n = 0;
    for key in &keys {
        let view = engine.peek(key).unwrap();
        if !view
            .positions
            .iter()
            .any(|(_, p)| p.state.address == pool_key(1))
        {
            continue;
        }
        let at = |p: &Pubkey| -> Option<u128> {
            let i = (0..POOLS).find(|i| pool_key(*i) == *p).unwrap();
            let price = m.pools[i].0?;
            if i == 1 {
                shocked_price(price, 5_000)
            } else {
                Some(price as u128)
            }
        };
        n += u64::from(sums_of(&engine, key, &at).liquidatable());
    }
    assert_eq!(last.liquidatable, n);
}
