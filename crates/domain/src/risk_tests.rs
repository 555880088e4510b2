//! The risk lens's math against big-integer references: shocked prices,
//! position values, and liquidation prices checked by what they mean (the
//! account crosses 1 exactly there), over random markets with negative value
//! exponents, pools holding deposits and debt, and shocks to zero and +1000%.

use num_bigint::{BigInt, BigUint};
use proptest::prelude::*;

use super::*;

fn big(x: &Big) -> BigUint {
    BigUint::from_bytes_le(&x.to_le_bytes::<64>())
}

fn r_pow10(n: u32) -> BigUint {
    BigUint::from(10u8).pow(n)
}

/// value_wad per §3, in arbitrary precision.
fn r_value(amount: &BigUint, price: u128, expo: i32, decimals: u8) -> BigUint {
    let total = 18 + i64::from(expo) - i64::from(decimals);
    let base = amount * BigUint::from(price);
    if total >= 0 {
        base * r_pow10(total as u32)
    } else {
        base / r_pow10((-total) as u32)
    }
}

fn r_tokens(pool: &PoolPricing, p: &PositionAmounts) -> (BigUint, BigUint) {
    let wad = BigUint::from(WAD);
    let tokens = BigUint::from(p.deposit_shares) * BigUint::from(pool.deposit_index_wad) / &wad;
    let principal = BigUint::from(p.borrow_principal);
    let debt = if p.borrow_idx_snap == 0 {
        principal
    } else {
        let num = principal * BigUint::from(pool.borrow_index_wad);
        let den = BigUint::from(p.borrow_idx_snap);
        (&num + &den - 1u8) / den
    };
    (tokens, debt)
}

fn pool() -> impl Strategy<Value = PoolPricing> {
    (
        1i64..=1_000_000_000_000,
        -12i32..=4,
        0u8..=18,
        (WAD / 2)..=WAD,
        WAD..=2 * WAD,
        WAD..=2 * WAD,
    )
        .prop_map(|(price, expo, decimals, lt, di, bi)| PoolPricing {
            oracle_price: Some(price),
            oracle_expo: Some(expo),
            decimals,
            liquidation_threshold_wad: lt,
            deposit_index_wad: di,
            borrow_index_wad: bi,
        })
}

fn amounts() -> impl Strategy<Value = PositionAmounts> {
    (
        prop_oneof![Just(0u64), 1u64..=1_000_000_000_000_000],
        prop_oneof![Just(0u64), 1u64..=1_000_000_000_000_000],
        prop_oneof![Just(0u128), WAD..=2 * WAD],
    )
        .prop_map(|(d, b, snap)| PositionAmounts {
            deposit_shares: d,
            borrow_principal: b,
            borrow_idx_snap: snap,
        })
}

#[test]
fn shocks_to_zero_and_to_plus_1000_percent() {
    assert_eq!(shocked_price(1_000, -10_000), None, "to zero: unpriced");
    assert_eq!(shocked_price(1_000, -9_999), None, "floor(0.1): unpriced");
    assert_eq!(shocked_price(10_000, -9_999), Some(1));
    assert_eq!(shocked_price(1_000, 100_000), Some(11_000));
    assert_eq!(
        shocked_price(i64::MAX, 100_000),
        Some(i64::MAX as u128 * 11)
    );
    assert_eq!(shocked_price(12_345, -1), Some(12_343), "floor(12343.7655)");
}

#[test]
fn curve_points_are_evenly_spaced_and_end_on_the_bounds() {
    assert_eq!(
        curve_points(-5_000, 0, 5),
        [-5_000, -4_000, -3_000, -2_000, -1_000, 0]
    );
    assert_eq!(curve_points(-10_000, 100_000, 1), [-10_000, 100_000]);
    let p = curve_points(-7, 3, 3);
    assert_eq!(p, [-7, -4, -1, 3], "floor(k x 10 / 3)");
}

#[test]
fn a_liquidation_price_per_side() {
    // $1,000 of collateral (lt 0.8) in x at $1 (expo -8, 6 decimals), $500 of
    // debt elsewhere: under water once x falls below $0.625.
    let pool = PoolPricing {
        oracle_price: Some(100_000_000),
        oracle_expo: Some(-8),
        decimals: 6,
        liquidation_threshold_wad: 8 * WAD / 10,
        deposit_index_wad: WAD,
        borrow_index_wad: WAD,
    };
    let deposit = PositionAmounts {
        deposit_shares: 1_000_000_000,
        borrow_principal: 0,
        borrow_idx_snap: 0,
    };
    let others = Sums {
        weighted: Big::ZERO,
        collateral: Big::ZERO,
        debt: Big::from(500u128 * WAD),
    };
    let lp = liquidation_price(&others, &pool, &deposit, 100_000_000, -8).unwrap();
    assert_eq!(lp.direction, Direction::Below);
    assert_eq!(lp.price, Wider::from(62_500_000u64));
    assert_eq!(lp.distance_bps, -3_750);
    // The same amount as debt against $1,000 of collateral elsewhere (lt 0.8):
    // under water once x rises above $0.8.
    let debt = PositionAmounts {
        deposit_shares: 0,
        borrow_principal: 1_000_000_000,
        borrow_idx_snap: 0,
    };
    let others = Sums {
        weighted: Big::from(800u128 * WAD),
        collateral: Big::from(1_000u128 * WAD),
        debt: Big::ZERO,
    };
    let lp = liquidation_price(&others, &pool, &debt, 100_000_000, -8).unwrap();
    assert_eq!(lp.direction, Direction::Above);
    assert_eq!(lp.price, Wider::from(80_000_000u64));
    assert_eq!(
        lp.distance_bps, -2_000,
        "already under water: the price is behind"
    );
    // No debt anywhere: no such price.
    assert_eq!(
        liquidation_price(&Sums::default(), &pool, &deposit, 100_000_000, -8),
        None
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn shocked_prices_are_exact(price in 1i64.., bps in MIN_SHOCK_BPS..=MAX_SHOCK_BPS) {
        let expected = BigInt::from(price) * BigInt::from(BPS + bps) / BigInt::from(BPS);
        let got = shocked_price(price, bps).map(BigInt::from).unwrap_or_default();
        prop_assert_eq!(got, expected.max(BigInt::from(0)));
    }

    #[test]
    fn a_moving_position_is_valued_as_any_other(pool in pool(), p in amounts(), price in prop_oneof![Just(None), (1u128..=u128::from(u64::MAX) * 11).prop_map(Some)]) {
        let expo = pool.oracle_expo.unwrap();
        prop_assert_eq!(Moving::new(&pool, &p, expo).at(price), position_values(&pool, &p, price, expo));
    }

    #[test]
    fn values_match_the_reference(pool in pool(), p in amounts(), price in 1u128..=u64::MAX as u128) {
        let expo = pool.oracle_expo.unwrap();
        let (c, cw, d) = position_values(&pool, &p, Some(price), expo);
        let (tokens, debt_tokens) = r_tokens(&pool, &p);
        let rc = r_value(&tokens, price, expo, pool.decimals);
        prop_assert_eq!(big(&c), rc.clone());
        prop_assert_eq!(big(&cw), rc * BigUint::from(pool.liquidation_threshold_wad) / BigUint::from(WAD));
        prop_assert_eq!(big(&d), r_value(&debt_tokens, price, expo, pool.decimals));
        prop_assert_eq!(position_values(&pool, &p, None, expo), (Big::ZERO, Big::ZERO, Big::ZERO));
    }

    /// History values an account from its sums in the same pass as scoring:
    /// the sums' health factor is the §3 account health factor, priced or not.
    #[test]
    fn the_sums_give_the_account_health_factor(
        items in proptest::collection::vec((pool(), amounts(), prop_oneof![Just(None), Just(Some(0i64)), Just(Some(-5i64))], any::<bool>()), 0..6)
    ) {
        let items: Vec<(PoolPricing, PositionAmounts)> = items
            .into_iter()
            .map(|(mut pool, p, unpriced, priced)| {
                if !priced {
                    pool.oracle_price = unpriced;
                }
                (pool, p)
            })
            .collect();
        let mut sums = Sums::default();
        for (pool, p) in &items {
            let price = pool.price().map(|(price, _)| u128::from(price.unsigned_abs()));
            sums.add(position_values(pool, p, price, pool.oracle_expo.unwrap_or(0)));
        }
        let pairs = || items.iter().map(|(pool, p)| (pool, p));
        // The 256-bit sums are the definition's sums.
        prop_assert_eq!(account_sums(pairs()), sums);
        // And their health factor, fast path or not, is the §3 one.
        prop_assert_eq!(sums.health_factor(), crate::wad::account_health_factor(pairs()));
        prop_assert_eq!(sums.health_factor(), health_factor_from_sums(sums.weighted, sums.debt));
    }

    /// The liquidation price is where the account crosses 1: with x's terms
    /// unfloored (§10), the health factor is at least 1 at it and below 1 one
    /// unit further into the direction it names. None only when no positive
    /// price crosses.
    #[test]
    fn the_liquidation_price_is_where_the_account_crosses_one(
        pool in pool(),
        p in amounts(),
        others_w in 0u128..=1_000_000 * WAD,
        others_d in 0u128..=1_000_000 * WAD,
    ) {
        let (price, expo) = (pool.oracle_price.unwrap(), pool.oracle_expo.unwrap());
        let others = Sums {
            weighted: Big::from(others_w),
            collateral: Big::from(others_w),
            debt: Big::from(others_d),
        };
        let (tokens, debt_tokens) = r_tokens(&pool, &p);
        let e = 18 + i64::from(expo) - i64::from(pool.decimals);
        let (s_num, s_den) = if e >= 0 { (r_pow10(e as u32), BigUint::from(1u8)) } else { (BigUint::from(1u8), r_pow10((-e) as u32)) };
        let wad = BigUint::from(WAD);
        // (A + cx L) - (B + dx L), scaled by WAD x s_den (a positive factor).
        let margin = |l: &BigUint| -> BigInt {
            let left = BigInt::from(BigUint::from(others_w) * &wad * &s_den)
                + BigInt::from(&tokens * BigUint::from(pool.liquidation_threshold_wad) * &s_num * l);
            let right = BigInt::from(BigUint::from(others_d) * &wad * &s_den)
                + BigInt::from(&debt_tokens * &s_num * l * &wad);
            left - right
        };
        match liquidation_price(&others, &pool, &p, price, expo) {
            Some(lp) => {
                let l = BigUint::from_bytes_le(&lp.price.to_le_bytes::<128>());
                prop_assert!(margin(&l) >= BigInt::from(0), "at least 1 at the price");
                let beyond = match lp.direction {
                    Direction::Below => {
                        prop_assume!(l > BigUint::from(0u8));
                        &l - 1u8
                    }
                    Direction::Above => &l + 1u8,
                };
                prop_assert!(margin(&beyond) < BigInt::from(0), "below 1 past it");
                // The distance, floored, from the current price.
                let current = BigInt::from(price);
                let delta = (BigInt::from(l) - &current) * BigInt::from(BPS);
                let floor: BigInt = if delta >= BigInt::from(0) { &delta / &current } else { -((-&delta + &current - BigInt::from(1)) / &current) };
                let clamped = floor.clamp(BigInt::from(i64::MIN + 1), BigInt::from(i64::MAX));
                prop_assert_eq!(BigInt::from(lp.distance_bps), clamped);
            }
            None => {
                // cx = dx, or the crossing is at p* <= 0: the margin's sign is
                // the same at every positive price (it is affine in the price).
                let at = |l: u128| margin(&BigUint::from(l)) >= BigInt::from(0);
                prop_assert_eq!(at(1), at(u64::MAX as u128), "a crossing was missed");
            }
        }
    }
}
