//! Interest rates of docs/design.md §3: kinked borrow rate, supply rate, and APY.
//! Rates are computed exactly in WAD integers (floor at each division); only
//! the final compounding to an APY is floating point, since it is returned as a
//! JSON number.

use ruint::aliases::U256;

use super::wad::WAD;

/// Seconds in a year, the compounding periods of the APY.
pub const SECONDS_PER_YEAR: f64 = 31_536_000.0;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateModel {
    pub base_rate_wad: u128,
    pub optimal_util_wad: u128,
    pub slope1_wad: u128,
    pub slope2_wad: u128,
    pub reserve_factor_wad: u128,
}

fn clamp_u128(x: U256) -> u128 {
    if x > U256::from(u128::MAX) {
        u128::MAX
    } else {
        x.to::<u128>()
    }
}

/// u = total_borrows / total_deposits in WAD; 0 with no deposits, at most 1 WAD.
pub fn utilization_wad(total_borrows: u64, total_deposits: u64) -> u128 {
    if total_deposits == 0 {
        return 0;
    }
    let u = u128::from(total_borrows) * WAD / u128::from(total_deposits);
    u.min(WAD)
}

/// base + slope1 x u/optimal when u <= optimal, else
/// base + slope1 + slope2 x (u - optimal)/(1 - optimal).
pub fn borrow_apr_wad(model: &RateModel, utilization_wad: u128) -> u128 {
    let (u, opt) = (
        U256::from(utilization_wad),
        U256::from(model.optimal_util_wad),
    );
    let base = U256::from(model.base_rate_wad);
    let slope1 = U256::from(model.slope1_wad);
    let rate = if u <= opt {
        if opt == U256::ZERO {
            base
        } else {
            base + slope1 * u / opt
        }
    } else {
        // u > optimal implies optimal < 1 WAD, so the denominator is positive.
        let excess = (u - opt) * U256::from(model.slope2_wad) / (U256::from(WAD) - opt);
        base + slope1 + excess
    };
    clamp_u128(rate)
}

/// borrow APR x u x (1 - reserve_factor).
pub fn supply_apr_wad(model: &RateModel, borrow_apr_wad: u128, utilization_wad: u128) -> u128 {
    let keep = WAD.saturating_sub(model.reserve_factor_wad);
    let wad = U256::from(WAD);
    let r = U256::from(borrow_apr_wad) * U256::from(utilization_wad) / wad * U256::from(keep) / wad;
    clamp_u128(r)
}

/// APY = (1 + APR/31536000)^31536000 - 1, as a fraction (0.05 is 5%).
pub fn apy(apr_wad: u128) -> f64 {
    let apr = apr_wad as f64 / WAD as f64;
    // exp(n ln(1 + r/n)) - 1, in the forms that keep precision for small rates.
    (SECONDS_PER_YEAR * (apr / SECONDS_PER_YEAR).ln_1p()).exp_m1()
}

/// (supply APY, borrow APY) of a pool.
pub fn pool_apys(model: &RateModel, total_borrows: u64, total_deposits: u64) -> (f64, f64) {
    let u = utilization_wad(total_borrows, total_deposits);
    let borrow = borrow_apr_wad(model, u);
    let supply = supply_apr_wad(model, borrow, u);
    (apy(supply), apy(borrow))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const PCT: u128 = WAD / 100;

    fn model() -> RateModel {
        RateModel {
            base_rate_wad: 2 * PCT,
            optimal_util_wad: 80 * PCT,
            slope1_wad: 4 * PCT,
            slope2_wad: 75 * PCT,
            reserve_factor_wad: 10 * PCT,
        }
    }

    #[test]
    fn kinked_rate() {
        let m = model();
        assert_eq!(borrow_apr_wad(&m, 0), 2 * PCT);
        assert_eq!(borrow_apr_wad(&m, 40 * PCT), 4 * PCT); // 2 + 4 x 0.5
        assert_eq!(borrow_apr_wad(&m, 80 * PCT), 6 * PCT); // at the kink
        assert_eq!(borrow_apr_wad(&m, 90 * PCT), 6 * PCT + 75 * PCT / 2); // half way up slope2
        assert_eq!(borrow_apr_wad(&m, WAD), 81 * PCT);
    }

    #[test]
    fn utilization_bounds() {
        assert_eq!(utilization_wad(5, 0), 0);
        assert_eq!(utilization_wad(50, 100), WAD / 2);
        assert_eq!(utilization_wad(150, 100), WAD, "at most 1");
        assert_eq!(utilization_wad(u64::MAX, u64::MAX), WAD);
    }

    #[test]
    fn supply_rate_and_apy() {
        let m = model();
        let u = 50 * PCT;
        let b = borrow_apr_wad(&m, u); // 4.5%
        assert_eq!(b, 45 * PCT / 10);
        assert_eq!(supply_apr_wad(&m, b, u), 45 * PCT / 10 / 2 * 9 / 10);
        // Continuous-ish compounding of 5% is e^0.05 - 1.
        assert!((apy(5 * PCT) - (0.05f64.exp() - 1.0)).abs() < 1e-9);
        assert_eq!(apy(0), 0.0);
        let (s, b) = pool_apys(&m, 50, 100);
        assert!(s > 0.0 && b > s);
    }

    #[test]
    fn degenerate_models_do_not_divide_by_zero() {
        let zero_opt = RateModel {
            optimal_util_wad: 0,
            ..model()
        };
        assert_eq!(borrow_apr_wad(&zero_opt, 0), 2 * PCT);
        assert_eq!(borrow_apr_wad(&zero_opt, WAD), 2 * PCT + 4 * PCT + 75 * PCT);
        let full_opt = RateModel {
            optimal_util_wad: WAD,
            ..model()
        };
        assert_eq!(borrow_apr_wad(&full_opt, WAD), 6 * PCT);
        let huge = RateModel {
            base_rate_wad: u128::MAX,
            slope1_wad: u128::MAX,
            ..model()
        };
        assert_eq!(borrow_apr_wad(&huge, WAD), u128::MAX);
    }

    proptest! {
        #[test]
        fn rates_are_monotonic_in_utilization(a in 0..=WAD, b in 0..=WAD) {
            let m = model();
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            prop_assert!(borrow_apr_wad(&m, lo) <= borrow_apr_wad(&m, hi));
            let s_lo = supply_apr_wad(&m, borrow_apr_wad(&m, lo), lo);
            let s_hi = supply_apr_wad(&m, borrow_apr_wad(&m, hi), hi);
            prop_assert!(s_lo <= s_hi);
            prop_assert!(s_hi <= borrow_apr_wad(&m, hi), "suppliers never earn more than borrowers pay");
        }
    }
}
