//! Exact money math of docs/design.md §3, in integers. WAD = 10^18.
//!
//! Products are taken in 512-bit integers (`ruint`): u64 amounts x u128 indexes x
//! i64 prices x 10^(18+expo) x u128 thresholds can pass 2^256 at the extremes, and
//! the results must be exact to the last wei, never wrapped.

use ruint::aliases::{U256, U512};

use super::wide::Wide;

pub const WAD: u128 = 1_000_000_000_000_000_000;
/// Health factor of an account with no (priced) debt: Aave's convention.
pub const NO_DEBT_HEALTH_FACTOR: u128 = u128::MAX;

pub type Big = U512;

/// deposit_tokens = floor(deposit_shares x deposit_index_wad / WAD)
pub fn deposit_tokens(deposit_shares: u64, deposit_index_wad: u128) -> Big {
    let Ok(tokens) = deposit_tokens_in(deposit_shares, deposit_index_wad);
    tokens
}

/// `deposit_tokens` at any width.
pub fn deposit_tokens_in<W: Wide>(shares: u64, index_wad: u128) -> Result<W, W::Err> {
    Ok(W::of(shares.into()).mul(W::of(index_wad))? / W::of(WAD))
}

/// borrow_debt = ceil(borrow_principal x borrow_index_wad / borrow_idx_snap);
/// a snapshot of 0 means the debt is the principal.
pub fn borrow_debt(borrow_principal: u64, borrow_index_wad: u128, borrow_idx_snap: u128) -> Big {
    let Ok(debt) = borrow_debt_in(borrow_principal, borrow_index_wad, borrow_idx_snap);
    debt
}

/// `borrow_debt` at any width.
pub fn borrow_debt_in<W: Wide>(
    principal: u64,
    index_wad: u128,
    idx_snap: u128,
) -> Result<W, W::Err> {
    let principal = W::of(principal.into());
    if idx_snap == 0 {
        return Ok(principal);
    }
    let num = principal.mul(W::of(index_wad))?;
    let den = W::of(idx_snap);
    let q = num / den;
    if num % den == W::ZERO {
        Ok(q)
    } else {
        q.add(W::ONE)
    }
}

/// Largest |18 + expo - decimals| taken literally; beyond it a value is clamped to
/// 0 (tiny) or saturates (huge). Real oracles use expo in -12..=4.
pub const MAX_TOTAL_EXPONENT: i64 = 90;

/// The power of ten of value_wad: 18 + expo - decimals.
pub fn total_exponent(expo: i32, decimals: u8) -> i64 {
    18 + i64::from(expo) - i64::from(decimals)
}

/// value_wad = amount x price x 10^(18 + expo - decimals); a negative total
/// exponent divides, flooring. `price` must be positive (callers check).
pub fn value_wad(amount: Big, price: i64, expo: i32, decimals: u8) -> Big {
    debug_assert!(price > 0);
    value_wad_at(amount, u128::from(price.unsigned_abs()), expo, decimals)
}

/// `value_wad` at any non-negative price, as wide as a u128 (a price plus its
/// oracle confidence can pass i64::MAX).
pub fn value_wad_at(amount: Big, price: u128, expo: i32, decimals: u8) -> Big {
    let Ok(value) = value_wad_in(amount, price, expo, decimals);
    value
}

/// `value_wad_at` at any width.
pub fn value_wad_in<W: Wide>(amount: W, price: u128, expo: i32, decimals: u8) -> Result<W, W::Err> {
    let base = amount.sat_mul(W::of(price))?;
    let total = total_exponent(expo, decimals);
    if total >= 0 {
        if total > MAX_TOTAL_EXPONENT {
            return if base == W::ZERO {
                Ok(W::ZERO)
            } else {
                W::saturated()
            };
        }
        base.sat_mul(W::pow10(total as u32)?)
    } else if -total > MAX_TOTAL_EXPONENT {
        Ok(W::ZERO)
    } else {
        Ok(base / W::pow10((-total) as u32)?)
    }
}

/// The pool inputs of the health factor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolPricing {
    pub oracle_price: Option<i64>,
    pub oracle_expo: Option<i32>,
    pub decimals: u8,
    pub liquidation_threshold_wad: u128,
    pub deposit_index_wad: u128,
    pub borrow_index_wad: u128,
}

impl PoolPricing {
    /// (price, expo) when the pool has a usable price: set, positive, with an exponent.
    pub fn price(&self) -> Option<(i64, i32)> {
        match (self.oracle_price, self.oracle_expo) {
            (Some(p), Some(e)) if p > 0 => Some((p, e)),
            _ => None,
        }
    }
}

/// The position inputs of the health factor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PositionAmounts {
    pub deposit_shares: u64,
    pub borrow_principal: u64,
    pub borrow_idx_snap: u128,
}

/// Collateral (threshold-weighted) and debt of one position, both in WAD USD.
/// An unpriced pool contributes nothing: its deposits are worth 0 and its debt
/// is left out (it cannot be liquidated without a price).
pub fn position_terms(pool: &PoolPricing, position: &PositionAmounts) -> (Big, Big) {
    let Some((price, expo)) = pool.price() else {
        return (Big::ZERO, Big::ZERO);
    };
    // Realistic values fit in 256 bits; the exact same integer math there is
    // several times faster. Any overflow falls back to 512 bits.
    if let Ok((c, d)) = position_terms_in::<U256>(pool, position, price, expo) {
        return (c.widen(), d.widen());
    }
    let Ok(terms) = position_terms_in(pool, position, price, expo);
    terms
}

/// `position_terms` of a priced pool at any width.
fn position_terms_in<W: Wide>(
    pool: &PoolPricing,
    position: &PositionAmounts,
    price: i64,
    expo: i32,
) -> Result<(W, W), W::Err> {
    let price = u128::from(price.unsigned_abs());
    let tokens = deposit_tokens_in::<W>(position.deposit_shares, pool.deposit_index_wad)?;
    let collateral = value_wad_in(tokens, price, expo, pool.decimals)?
        .sat_mul(W::of(pool.liquidation_threshold_wad))?
        / W::of(WAD);
    let debt_tokens = borrow_debt_in::<W>(
        position.borrow_principal,
        pool.borrow_index_wad,
        position.borrow_idx_snap,
    )?;
    let debt = value_wad_in(debt_tokens, price, expo, pool.decimals)?;
    Ok((collateral, debt))
}

/// 10^n for n in 0..=38 (every power of ten below 2^128).
const POW10_128: [u128; 39] = {
    let mut table = [1u128; 39];
    let mut i = 1;
    while i < 39 {
        table[i] = table[i - 1] * 10;
        i += 1;
    }
    table
};

/// floor(a x b / WAD) in u128, exact: with a = q WAD + r it is q b + floor(r b / WAD),
/// which stays within 128 bits for realistic values; `None` if it would not.
fn mul_div_wad_128(a: u128, b: u128) -> Option<u128> {
    let (q, r) = (a / WAD, a % WAD);
    q.checked_mul(b)?.checked_add(r.checked_mul(b)? / WAD)
}

/// `position_terms` in u128 (hardware arithmetic, the common case of a price
/// move); the same integer steps, so the same result; `None` on any overflow.
fn position_terms_128(
    pool: &PoolPricing,
    position: &PositionAmounts,
    price: i64,
    expo: i32,
) -> Option<(u128, u128)> {
    let (_, collateral, debt) =
        position_values_128(pool, position, u128::from(price.unsigned_abs()), expo)?;
    Some((collateral, debt))
}

/// A position's raw collateral value, threshold-weighted collateral value and
/// debt value (§3) at `price`, in u128; `None` on any overflow (callers then
/// take the 256- or 512-bit path, which gives the same integers).
pub fn position_values_128(
    pool: &PoolPricing,
    position: &PositionAmounts,
    price: u128,
    expo: i32,
) -> Option<(u128, u128, u128)> {
    let (tokens, debt_tokens) = position_tokens_128(pool, position)?;
    token_values_128(pool, tokens, debt_tokens, price, expo)
}

/// A position's deposit tokens and debt tokens (§3) in u128, if they fit.
pub fn position_tokens_128(pool: &PoolPricing, position: &PositionAmounts) -> Option<(u128, u128)> {
    let tokens = u128::from(position.deposit_shares).checked_mul(pool.deposit_index_wad)? / WAD;
    let principal = u128::from(position.borrow_principal);
    let debt_tokens = if position.borrow_idx_snap == 0 {
        principal
    } else {
        let num = principal.checked_mul(pool.borrow_index_wad)?;
        num.div_ceil(position.borrow_idx_snap)
    };
    Some((tokens, debt_tokens))
}

/// The values of given deposit and debt token amounts at `price`, in u128:
/// the rest of `position_values_128`, for a position valued at many prices.
pub fn token_values_128(
    pool: &PoolPricing,
    tokens: u128,
    debt_tokens: u128,
    price: u128,
    expo: i32,
) -> Option<(u128, u128, u128)> {
    let total = 18 + i64::from(expo) - i64::from(pool.decimals);
    let scale = *POW10_128.get(total.unsigned_abs() as usize)?;
    let value = |amount: u128| -> Option<u128> {
        let base = amount.checked_mul(price)?;
        if total >= 0 {
            base.checked_mul(scale)
        } else {
            Some(base / scale)
        }
    };
    let raw = value(tokens)?;
    let weighted = mul_div_wad_128(raw, pool.liquidation_threshold_wad)?;
    Some((raw, weighted, value(debt_tokens)?))
}

/// floor(sum collateral x WAD / sum debt), clamped to u128 max; u128 max with no debt.
pub fn health_factor_from_sums(collateral: Big, debt: Big) -> u128 {
    let Ok(hf) = health_factor_from_sums_in(collateral, debt);
    hf
}

/// `health_factor_from_sums` at any width.
pub fn health_factor_from_sums_in<W: Wide>(collateral: W, debt: W) -> Result<u128, W::Err> {
    if debt == W::ZERO {
        return Ok(NO_DEBT_HEALTH_FACTOR);
    }
    Ok((collateral.sat_mul(W::of(WAD))? / debt).clamp_u128())
}

/// The account health factor over all of an owner's positions (docs/design.md §3).
/// Computed in 256-bit integers when nothing overflows (the usual case), else
/// again in 512 bits; both are exact, so the result is the same.
pub fn account_health_factor<'a, I>(positions: I) -> u128
where
    I: IntoIterator<Item = (&'a PoolPricing, &'a PositionAmounts)>,
    I::IntoIter: Clone,
{
    let positions = positions.into_iter();
    if let Some(hf) = health_factor_256(positions.clone()) {
        return hf;
    }
    let (mut collateral, mut debt) = (Big::ZERO, Big::ZERO);
    for (pool, position) in positions {
        let (c, d) = position_terms(pool, position);
        collateral = collateral.saturating_add(c);
        debt = debt.saturating_add(d);
    }
    health_factor_from_sums(collateral, debt)
}

fn health_factor_256<'a>(
    positions: impl Iterator<Item = (&'a PoolPricing, &'a PositionAmounts)>,
) -> Option<u128> {
    let (mut collateral, mut debt) = (U256::ZERO, U256::ZERO);
    for (pool, position) in positions {
        let Some((price, expo)) = pool.price() else {
            continue;
        };
        let (c, d) = match position_terms_128(pool, position, price, expo) {
            Some((c, d)) => (U256::from(c), U256::from(d)),
            None => position_terms_in::<U256>(pool, position, price, expo).ok()?,
        };
        collateral = collateral.checked_add(c)?;
        debt = debt.checked_add(d)?;
    }
    health_factor_from_sums_in(collateral, debt).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_bigint::BigUint;
    use proptest::prelude::*;

    #[test]
    fn typical_positions_take_the_u128_path() {
        // 10,000 tokens of 9 decimals at $150 (expo -8), indexes a little above 1.
        let pool = PoolPricing {
            oracle_price: Some(15_000_000_000),
            oracle_expo: Some(-8),
            decimals: 9,
            liquidation_threshold_wad: 8 * WAD / 10,
            deposit_index_wad: 102 * WAD / 100,
            borrow_index_wad: 105 * WAD / 100,
        };
        let position = PositionAmounts {
            deposit_shares: 10_000_000_000_000,
            borrow_principal: 4_000_000_000_000,
            borrow_idx_snap: WAD,
        };
        assert!(position_terms_128(&pool, &position, 15_000_000_000, -8).is_some());
    }

    // ---- an independent reference in arbitrary precision ----

    fn r_wad() -> BigUint {
        BigUint::from(WAD)
    }

    fn r_value(amount: &BigUint, price: i64, expo: i32, decimals: u8) -> BigUint {
        let total = 18 + expo as i64 - decimals as i64;
        let base = amount * BigUint::from(price as u64);
        if total >= 0 {
            base * BigUint::from(10u8).pow(total as u32)
        } else {
            base / BigUint::from(10u8).pow((-total) as u32)
        }
    }

    fn r_hf(items: &[(PoolPricing, PositionAmounts)]) -> u128 {
        let mut collateral = BigUint::from(0u8);
        let mut debt = BigUint::from(0u8);
        for (pool, pos) in items {
            let (Some(price), Some(expo)) = (pool.oracle_price, pool.oracle_expo) else {
                continue;
            };
            if price <= 0 {
                continue;
            }
            let tokens =
                BigUint::from(pos.deposit_shares) * BigUint::from(pool.deposit_index_wad) / r_wad();
            collateral += r_value(&tokens, price, expo, pool.decimals)
                * BigUint::from(pool.liquidation_threshold_wad)
                / r_wad();
            let p = BigUint::from(pos.borrow_principal);
            let d = if pos.borrow_idx_snap == 0 {
                p
            } else {
                let num = p * BigUint::from(pool.borrow_index_wad);
                let den = BigUint::from(pos.borrow_idx_snap);
                (&num + &den - BigUint::from(1u8)) / den
            };
            debt += r_value(&d, price, expo, pool.decimals);
        }
        if debt == BigUint::from(0u8) {
            return u128::MAX;
        }
        let hf = collateral * r_wad() / debt;
        u128::try_from(hf).unwrap_or(u128::MAX)
    }

    fn wad_ratio() -> impl Strategy<Value = u128> {
        prop_oneof![Just(0u128), Just(WAD), 0..=2 * WAD, any::<u128>()]
    }

    fn amount() -> impl Strategy<Value = u64> {
        prop_oneof![
            Just(0u64),
            Just(u64::MAX),
            0..1_000_000_000u64,
            any::<u64>()
        ]
    }

    prop_compose! {
        fn pool()(
            price in prop_oneof![Just(None), Just(Some(0i64)), Just(Some(-5i64)), (1..i64::MAX).prop_map(Some), (1..100_000_000i64).prop_map(Some)],
            expo in prop_oneof![Just(None), (-12i32..=4).prop_map(Some)],
            decimals in 0u8..=12,
            lt in wad_ratio(),
            di in prop_oneof![Just(WAD), WAD..3 * WAD, any::<u128>()],
            bi in prop_oneof![Just(WAD), WAD..3 * WAD, any::<u128>()],
        ) -> PoolPricing {
            PoolPricing { oracle_price: price, oracle_expo: expo, decimals, liquidation_threshold_wad: lt,
                          deposit_index_wad: di, borrow_index_wad: bi }
        }
    }

    prop_compose! {
        fn position()(shares in amount(), principal in amount(), snap in prop_oneof![Just(0u128), Just(WAD), WAD..3 * WAD, any::<u128>()]) -> PositionAmounts {
            PositionAmounts { deposit_shares: shares, borrow_principal: principal, borrow_idx_snap: snap }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn health_factor_matches_reference(items in proptest::collection::vec((pool(), position()), 0..6)) {
            let ours = account_health_factor(items.iter().map(|(p, q)| (p, q)));
            prop_assert_eq!(ours, r_hf(&items));
        }

        #[test]
        fn u128_path_equals_the_256_bit_path(
            shares in prop_oneof![0..10_000_000_000_000u64, any::<u64>()],
            principal in prop_oneof![0..10_000_000_000_000u64, any::<u64>()],
            di in WAD..3 * WAD, bi in WAD..3 * WAD, snap in prop_oneof![Just(0u128), WAD..2 * WAD],
            price in prop_oneof![1..1_000_000_000_000i64, 1..i64::MAX],
            expo in -12i32..=4, decimals in 0u8..=12, lt in 0..=WAD,
        ) {
            let pool = PoolPricing { oracle_price: Some(price), oracle_expo: Some(expo), decimals,
                liquidation_threshold_wad: lt, deposit_index_wad: di, borrow_index_wad: bi };
            let position = PositionAmounts { deposit_shares: shares, borrow_principal: principal, borrow_idx_snap: snap };
            if let Some((c, d)) = position_terms_128(&pool, &position, price, expo) {
                let (wc, wd) = position_terms_in::<U256>(&pool, &position, price, expo).unwrap();
                prop_assert_eq!(U256::from(c), wc);
                prop_assert_eq!(U256::from(d), wd);
            }
        }

        #[test]
        fn fast_path_equals_wide_path(pool in pool(), position in position()) {
            if let Some((price, expo)) = pool.price()
                && let Ok((c, d)) = position_terms_in::<U256>(&pool, &position, price, expo) {
                    let Ok((wide_c, wide_d)) = position_terms_in::<U512>(&pool, &position, price, expo);
                    prop_assert_eq!(Big::from(c), wide_c);
                    prop_assert_eq!(Big::from(d), wide_d);
                }
        }

        #[test]
        fn debt_rounds_up_tokens_round_down(principal in amount(), bi in any::<u128>(), snap in 1u128..) {
            let num = BigUint::from(principal) * BigUint::from(bi);
            let den = BigUint::from(snap);
            let floor = &num / &den;
            let expected = if &floor * &den == num { floor } else { floor + 1u8 };
            prop_assert_eq!(borrow_debt(principal, bi, snap).to_string(), expected.to_string());
        }

        #[test]
        fn value_matches_reference(amount in any::<u64>(), price in 1..i64::MAX, expo in -12i32..=4, decimals in 0u8..=12) {
            let ours = value_wad(Big::from(amount), price, expo, decimals);
            prop_assert_eq!(ours.to_string(), r_value(&BigUint::from(amount), price, expo, decimals).to_string());
        }
    }

    #[test]
    fn worked_examples() {
        // 1000 USDC (6 decimals) at $1.00 (price 100_000_000, expo -8) = 1000 WAD.
        let v = value_wad(Big::from(1_000_000_000u64), 100_000_000, -8, 6);
        assert_eq!(v, Big::from(1000u128 * WAD));
        // Debt 10 * 1.1 / 1.0 = 11 exactly; 10 * 1.05 / 1.1 = 9.545.. -> 10 (ceil).
        assert_eq!(borrow_debt(10, 11 * WAD / 10, WAD), Big::from(11u8));
        assert_eq!(
            borrow_debt(10, 105 * WAD / 100, 11 * WAD / 10),
            Big::from(10u8)
        );
        assert_eq!(
            borrow_debt(10, 5 * WAD, 0),
            Big::from(10u8),
            "snapshot 0 means principal"
        );

        let usdc = PoolPricing {
            oracle_price: Some(100_000_000),
            oracle_expo: Some(-8),
            decimals: 6,
            liquidation_threshold_wad: 85 * WAD / 100,
            deposit_index_wad: WAD,
            borrow_index_wad: WAD,
        };
        let deposit = PositionAmounts {
            deposit_shares: 1_000_000_000,
            borrow_principal: 0,
            borrow_idx_snap: WAD,
        };
        let borrow = PositionAmounts {
            deposit_shares: 0,
            borrow_principal: 900_000_000,
            borrow_idx_snap: WAD,
        };
        // Collateral 1000 x 0.85 = 850; debt 900 -> 0.9444.. WAD.
        let hf = account_health_factor([(&usdc, &deposit), (&usdc, &borrow)]);
        assert_eq!(hf, 850 * WAD / 900);
        assert!(hf < WAD);
        // No debt: u128 max.
        assert_eq!(account_health_factor([(&usdc, &deposit)]), u128::MAX);
        assert_eq!(account_health_factor(std::iter::empty()), u128::MAX);
        // An unpriced pool's debt is left out and its deposits are worth 0.
        let unpriced = PoolPricing {
            oracle_price: None,
            ..usdc
        };
        assert_eq!(
            account_health_factor([(&usdc, &deposit), (&unpriced, &borrow)]),
            u128::MAX
        );
        let nonpositive = PoolPricing {
            oracle_price: Some(0),
            ..usdc
        };
        assert_eq!(
            account_health_factor([(&nonpositive, &deposit), (&usdc, &borrow)]),
            0
        );
    }

    #[test]
    fn decimals_matter() {
        // The same raw amount at 9 decimals is worth 1000x less than at 6:
        // the legacy default of 9 hides underwater accounts.
        let at = |decimals| value_wad(Big::from(1_000_000u64), 100_000_000, -8, decimals);
        assert_eq!(at(6) / at(9), Big::from(1000u16));
    }
}
