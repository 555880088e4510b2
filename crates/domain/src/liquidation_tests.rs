//! §8 against an independent reference in arbitrary precision (num-bigint): the
//! reference finds `tokens_of` by binary search over the definition, prices every
//! pair from the formulas, and picks the best by brute force.

use num_bigint::BigUint;
use proptest::prelude::*;

use super::*;
use crate::wad::value_wad_at;

const USD: i64 = 100_000_000; // $1 at expo -8

fn pricing(price: Option<i64>, expo: i32, decimals: u8) -> PoolPricing {
    PoolPricing {
        oracle_price: price,
        oracle_expo: Some(expo),
        decimals,
        liquidation_threshold_wad: 8 * WAD / 10,
        deposit_index_wad: WAD,
        borrow_index_wad: WAD,
    }
}

fn terms() -> LiquidationTerms {
    LiquidationTerms {
        close_factor_wad: WAD / 2,
        liquidation_bonus_wad: 5 * WAD / 100,
        protocol_liq_fee_wad: WAD / 100,
        oracle_conf: None,
    }
}

fn amounts(deposit: u64, borrow: u64) -> PositionAmounts {
    PositionAmounts {
        deposit_shares: deposit,
        borrow_principal: borrow,
        borrow_idx_snap: WAD,
    }
}

fn big(s: &str) -> Big {
    s.parse().unwrap()
}

/// 1,000 USDC of debt against 1 SOL at $1,000 (threshold 0.8, close factor 0.5,
/// bonus 5%, fee 1%): repay 500 USDC, seize 0.525 SOL, profit 24.75 USD.
#[test]
fn worked_example_plain() {
    let (usdc, sol) = (
        Pubkey::new_from_array([1; 32]),
        Pubkey::new_from_array([2; 32]),
    );
    let (pu, ps) = (
        Pubkey::new_from_array([3; 32]),
        Pubkey::new_from_array([4; 32]),
    );
    let (usdc_p, sol_p) = (pricing(Some(USD), -8, 6), pricing(Some(1_000 * USD), -8, 9));
    let t = terms();
    let (debt, coll) = (amounts(0, 1_000_000_000), amounts(1_000_000_000, 0));
    let inputs = [
        QuoteInput {
            pool: &usdc,
            position: &pu,
            pricing: &usdc_p,
            terms: &t,
            amounts: &debt,
        },
        QuoteInput {
            pool: &sol,
            position: &ps,
            pricing: &sol_p,
            terms: &t,
            amounts: &coll,
        },
    ];
    let q = best_quote(&inputs, None, None).unwrap();
    assert_eq!((q.debt_pool, q.collateral_pool), (usdc, sol));
    assert_eq!((q.debt_position, q.collateral_position), (pu, ps));
    assert_eq!(q.repay_amount, big("500000000"), "500 USDC");
    assert_eq!(q.seize_amount, big("525000000"), "0.525 SOL");
    assert_eq!(q.repay_value_wad, big("500000000000000000000"));
    assert_eq!(q.seize_value_wad, big("525000000000000000000"));
    assert_eq!(q.protocol_fee_value_wad, big("250000000000000000"));
    assert_eq!(q.profit_value_wad, big("24750000000000000000"), "24.75 USD");
    // Pool filters: only pairs with that pool; none with a pool it does not hold.
    assert_eq!(best_quote(&inputs, Some(&usdc), Some(&sol)), Some(q));
    assert_eq!(best_quote(&inputs, Some(&sol), None), None);
}

/// Only 0.5 SOL ($500) of collateral: the 525 USD seize does not fit, so the
/// repay shrinks to what $500 of collateral pays for with its bonus.
#[test]
fn worked_example_collateral_capped() {
    let (usdc, sol) = (
        Pubkey::new_from_array([1; 32]),
        Pubkey::new_from_array([2; 32]),
    );
    let (usdc_p, sol_p) = (pricing(Some(USD), -8, 6), pricing(Some(1_000 * USD), -8, 9));
    let t = terms();
    let (debt, coll) = (amounts(0, 1_000_000_000), amounts(500_000_000, 0));
    let inputs = [
        QuoteInput {
            pool: &usdc,
            position: &usdc,
            pricing: &usdc_p,
            terms: &t,
            amounts: &debt,
        },
        QuoteInput {
            pool: &sol,
            position: &sol,
            pricing: &sol_p,
            terms: &t,
            amounts: &coll,
        },
    ];
    let q = best_quote(&inputs, None, None).unwrap();
    // 500 / 1.05 = 476.190476190... USD -> 476.190476 USDC (6 decimals, floored).
    assert_eq!(q.repay_amount, big("476190476"));
    assert_eq!(q.repay_value_wad, big("476190476000000000000"));
    assert_eq!(q.seize_value_wad, big("499999999800000000000"));
    assert_eq!(
        q.seize_amount,
        big("499999999"),
        "floored, within the 0.5 SOL held"
    );
    assert_eq!(q.protocol_fee_value_wad, big("238095238000000000"));
    assert_eq!(q.profit_value_wad, big("23571428562000000000"));
}

#[test]
fn confidence_lowers_the_health_factor() {
    let (usdc, sol) = (
        Pubkey::new_from_array([1; 32]),
        Pubkey::new_from_array([2; 32]),
    );
    let usdc_p = pricing(Some(USD), -8, 6);
    let sol_p = pricing(Some(1_000 * USD), -8, 9);
    let mut t = terms();
    let plain = [
        (usdc, usdc_p, amounts(0, 700_000_000)),
        (sol, sol_p, amounts(1_000_000_000, 0)),
    ];
    let inputs = |t: &LiquidationTerms| -> u128 {
        let v: Vec<QuoteInput> = plain
            .iter()
            .map(|(k, p, a)| QuoteInput {
                pool: k,
                position: k,
                pricing: p,
                terms: t,
                amounts: a,
            })
            .collect();
        health_factor_with_confidence(&v)
    };
    // No confidence: the plain value, 800 / 700.
    assert_eq!(inputs(&t), 8 * WAD / 7);
    // $10 of confidence: 990 x 0.8 / 701 (USDC's debt also moves up by $10 per token).
    t.oracle_conf = Some(10 * USD as u64);
    let expected = BigUint::from(792u32) * BigUint::from(WAD) / BigUint::from(7_700u32);
    assert_eq!(inputs(&t).to_string(), expected.to_string());
}

// ---- the reference --------------------------------------------------------------

fn r(x: impl Into<BigUint>) -> BigUint {
    x.into()
}

fn r_value(amount: &BigUint, price: u128, expo: i32, decimals: u8) -> BigUint {
    let e = 18 + i64::from(expo) - i64::from(decimals);
    let base = amount * r(price);
    if e >= 0 {
        base * r(10u8).pow(e as u32)
    } else {
        base / r(10u8).pow((-e) as u32)
    }
}

/// The largest a with value(a) <= v, by binary search over the definition.
fn r_tokens_of(v: &BigUint, price: u128, expo: i32, decimals: u8) -> BigUint {
    let (mut lo, mut hi) = (r(0u8), (v + r(1u8)) * r(10u8).pow(30) + r(1u8));
    while &lo + r(1u8) < hi {
        let mid = (&lo + &hi) / r(2u8);
        if r_value(&mid, price, expo, decimals) <= *v {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

#[derive(Debug)]
struct RPos {
    pool: Pubkey,
    price: Option<i64>,
    expo: i32,
    decimals: u8,
    deposit_index: u128,
    borrow_index: u128,
    shares: u64,
    principal: u64,
    snap: u128,
    cf: u128,
    bonus: u128,
    fee: u128,
}

/// (profit, repay value, debt pool string, collateral pool string, fields...)
type RQuote = (BigUint, BigUint, String, String, [BigUint; 6]);

fn r_pair(d: &RPos, c: &RPos) -> Option<RQuote> {
    let (dp, cp) = (
        d.price.filter(|p| *p > 0)? as u128,
        c.price.filter(|p| *p > 0)? as u128,
    );
    let wad = r(WAD);
    let debt = if d.snap == 0 {
        r(d.principal)
    } else {
        (r(d.principal) * r(d.borrow_index) + r(d.snap) - r(1u8)) / r(d.snap)
    };
    let coll = r(c.shares) * r(c.deposit_index) / &wad;
    if debt == r(0u8) || coll == r(0u8) {
        return None;
    }
    let with_bonus = &wad + r(c.bonus);
    let mut repay = &debt * r(d.cf) / &wad;
    let mut repay_value = r_value(&repay, dp, d.expo, d.decimals);
    let mut seize_value = &repay_value * &with_bonus / &wad;
    let coll_value = r_value(&coll, cp, c.expo, c.decimals);
    if seize_value > coll_value {
        repay = r_tokens_of(&(&coll_value * &wad / &with_bonus), dp, d.expo, d.decimals);
        repay_value = r_value(&repay, dp, d.expo, d.decimals);
        seize_value = &repay_value * &with_bonus / &wad;
    }
    if repay == r(0u8) {
        return None;
    }
    let seize = r_tokens_of(&seize_value, cp, c.expo, c.decimals).min(coll);
    let bonus = &seize_value - &repay_value;
    let fee = &bonus * r(c.fee) / &wad;
    let profit = if fee > bonus { r(0u8) } else { &bonus - &fee };
    Some((
        profit.clone(),
        repay_value.clone(),
        d.pool.to_string(),
        c.pool.to_string(),
        [repay, seize, repay_value, seize_value, fee, profit],
    ))
}

fn r_best(ps: &[RPos]) -> Option<RQuote> {
    let mut all: Vec<RQuote> = Vec::new();
    for d in ps.iter().filter(|p| p.principal > 0) {
        for c in ps.iter().filter(|p| p.shares > 0) {
            all.extend(r_pair(d, c));
        }
    }
    all.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(b.1.cmp(&a.1))
            .then(a.2.cmp(&b.2))
            .then(a.3.cmp(&b.3))
    });
    all.into_iter().next()
}

fn ratio() -> impl Strategy<Value = u128> {
    prop_oneof![Just(0u128), Just(WAD), 0..=WAD, 0..=WAD / 5]
}

prop_compose! {
    fn rpos()(
        price in prop_oneof![Just(None), Just(Some(0i64)), (1..i64::MAX).prop_map(Some), (1..100_000_000i64).prop_map(Some)],
        expo in -12i32..=4,
        decimals in 0u8..=12,
        deposit_index in prop_oneof![Just(WAD), WAD..3 * WAD],
        borrow_index in prop_oneof![Just(WAD), WAD..3 * WAD],
        shares in prop_oneof![Just(0u64), any::<u64>(), 0..1_000_000_000u64],
        principal in prop_oneof![Just(0u64), any::<u64>(), 0..1_000_000_000u64],
        snap in prop_oneof![Just(0u128), Just(WAD), WAD..2 * WAD],
        cf in ratio(), bonus in ratio(), fee in ratio(),
    ) -> RPos {
        RPos { pool: Pubkey::default(), price, expo, decimals, deposit_index,
               borrow_index, shares, principal, snap, cf, bonus, fee }
    }
}

fn inputs(ps: &[RPos]) -> Vec<(PoolPricing, LiquidationTerms, PositionAmounts)> {
    ps.iter()
        .map(|p| {
            (
                PoolPricing {
                    oracle_price: p.price,
                    oracle_expo: Some(p.expo),
                    decimals: p.decimals,
                    liquidation_threshold_wad: 8 * WAD / 10,
                    deposit_index_wad: p.deposit_index,
                    borrow_index_wad: p.borrow_index,
                },
                LiquidationTerms {
                    close_factor_wad: p.cf,
                    liquidation_bonus_wad: p.bonus,
                    protocol_liq_fee_wad: p.fee,
                    oracle_conf: None,
                },
                PositionAmounts {
                    deposit_shares: p.shares,
                    borrow_principal: p.principal,
                    borrow_idx_snap: p.snap,
                },
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn tokens_of_is_the_exact_inverse_bound(
        v in prop_oneof![Just(0u128), 0..1_000_000u128, any::<u128>()],
        price in 1..i64::MAX, expo in -12i32..=4, decimals in 0u8..=12,
    ) {
        let p = pricing(Some(price), expo, decimals);
        let t = tokens_of(Big::from(v), &p);
        let value = |a: Big| value_wad_at(a, price as u128, expo, decimals);
        prop_assert!(value(t) <= Big::from(v));
        prop_assert!(value(t + Big::from(1u8)) > Big::from(v));
        prop_assert_eq!(t.to_string(), r_tokens_of(&r(v), price as u128, expo, decimals).to_string());
    }

    #[test]
    fn the_best_pair_matches_a_brute_force_reference(ps in proptest::collection::vec(rpos(), 1..7)) {
        // One position per pool, as on chain (a position is a PDA of pool and owner).
        let ps: Vec<RPos> = ps
            .into_iter()
            .enumerate()
            .map(|(i, mut p)| {
                p.pool = Pubkey::new_from_array([i as u8 * 37 + 1; 32]);
                p
            })
            .collect();
        let data = inputs(&ps);
        let positions: Vec<QuoteInput> = ps.iter().zip(&data).map(|(p, (pricing, terms, amounts))| {
            QuoteInput { pool: &p.pool, position: &p.pool, pricing, terms, amounts }
        }).collect();
        let ours = best_quote(&positions, None, None);
        let reference = r_best(&ps);
        prop_assert_eq!(ours.is_some(), reference.is_some());
        if let (Some(q), Some((_, _, dp, cp, f))) = (ours, reference) {
            prop_assert_eq!(q.debt_pool.to_string(), dp);
            prop_assert_eq!(q.collateral_pool.to_string(), cp);
            let got = [q.repay_amount, q.seize_amount, q.repay_value_wad, q.seize_value_wad,
                       q.protocol_fee_value_wad, q.profit_value_wad].map(|x| x.to_string());
            prop_assert_eq!(got, f.map(|x| x.to_string()));
            // Seize never above what the collateral position holds.
            let c = ps.iter().find(|p| p.pool == q.collateral_pool).unwrap();
            let held = r(c.shares) * r(c.deposit_index) / r(WAD);
            prop_assert!(q.seize_amount.to_string().parse::<BigUint>().unwrap() <= held);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// The 256-bit path either gives up or equals the 512-bit definition, also at
    /// the saturating edges (exponents past ±90, indexes up to u128::MAX).
    #[test]
    fn the_256_bit_path_equals_the_definition_or_gives_up(
        ps in proptest::collection::vec(rpos(), 2..4),
        expos in proptest::collection::vec(prop_oneof![-12i32..=4, -120i32..=120], 4),
        indexes in proptest::collection::vec(prop_oneof![Just(WAD), any::<u128>()], 4),
        conf in prop_oneof![Just(0u64), any::<u64>()],
    ) {
        let ps: Vec<RPos> = ps.into_iter().enumerate().map(|(i, mut p)| {
            p.pool = Pubkey::new_from_array([i as u8 + 1; 32]);
            p.expo = expos[i];
            p.deposit_index = indexes[i];
            p.borrow_index = indexes[3 - i];
            p
        }).collect();
        let mut data = inputs(&ps);
        for (_, terms, _) in &mut data {
            terms.oracle_conf = Some(conf);
        }
        let positions: Vec<QuoteInput> = ps.iter().zip(&data).map(|(p, (pricing, terms, amounts))| {
            QuoteInput { pool: &p.pool, position: &p.pool, pricing, terms, amounts }
        }).collect();
        for d in &positions {
            for c in &positions {
                let Ok(wide) = pair_amounts::<Big>(d, c);
                if let Ok(narrow) = pair_amounts::<U256>(d, c) {
                    let fields = |a: Option<Amounts<Big>>| a.map(|a| [a.repay, a.seize, a.repay_value, a.seize_value, a.fee, a.profit]);
                    prop_assert_eq!(fields(narrow.map(Amounts::widen)), fields(wide));
                }
            }
        }
        let Ok(wide) = health_factor_with_confidence_in::<Big>(&positions);
        if let Ok(narrow) = health_factor_with_confidence_in::<U256>(&positions) {
            prop_assert_eq!(narrow, wide);
        }
        prop_assert_eq!(health_factor_with_confidence(&positions), wide);
    }
}

#[test]
fn realistic_quotes_take_the_256_bit_path() {
    let (sol, usdc) = (pricing(Some(1_000 * USD), -8, 9), pricing(Some(USD), -8, 6));
    let terms = terms();
    let (collateral, debt) = (amounts(1_000_000_000, 0), amounts(0, 1_000_000_000));
    let (a, b) = (
        Pubkey::new_from_array([1; 32]),
        Pubkey::new_from_array([2; 32]),
    );
    let c = QuoteInput {
        pool: &a,
        position: &a,
        pricing: &sol,
        terms: &terms,
        amounts: &collateral,
    };
    let d = QuoteInput {
        pool: &b,
        position: &b,
        pricing: &usdc,
        terms: &terms,
        amounts: &debt,
    };
    assert!(matches!(pair_amounts::<U256>(&d, &c), Ok(Some(_))));
    assert!(health_factor_with_confidence_in::<U256>(&[c, d]).is_ok());
}
