//! The risk lens's math (docs/design.md §10), exact and in integers: a shocked
//! oracle price, an owner's sums at any prices, and the price at which an
//! account crosses a health factor of 1.
//!
//! Notation of §10, for an owner and one of its priced pools i: Cw_i =
//! floor(value_wad(deposit_tokens_i) x lt_i / WAD), D_i =
//! value_wad(borrow_debt_i), C_i = value_wad(deposit_tokens_i). An account is
//! liquidatable when sum Cw < sum D (its §3 health factor is below 1 WAD).

use ruint::Uint;
use ruint::aliases::U256;

use super::wad::{
    Big, MAX_TOTAL_EXPONENT, PoolPricing, PositionAmounts, WAD, borrow_debt_in, deposit_tokens_in,
    health_factor_from_sums, health_factor_from_sums_in, position_tokens_128, position_values_128,
    token_values_128, total_exponent, value_wad_in,
};
use super::wide::Wide;

/// Basis points in one: a change of 10,000 bps doubles a price.
pub const BPS: i64 = 10_000;
/// The range of a shock (docs/design.md §10): down to zero, up to +1000%.
pub const MIN_SHOCK_BPS: i64 = -10_000;
pub const MAX_SHOCK_BPS: i64 = 100_000;

/// floor(price x (10000 + bps) / 10000) for a positive `price` and a shock in
/// range; `None` when the result is not positive (the pool is then unpriced).
pub fn shocked_price(price: i64, bps: i64) -> Option<u128> {
    debug_assert!(price > 0 && (MIN_SHOCK_BPS..=MAX_SHOCK_BPS).contains(&bps));
    let factor = u128::try_from(BPS + bps).ok()?;
    let shocked = u128::try_from(price).ok()? * factor / BPS as u128;
    (shocked > 0).then_some(shocked)
}

/// The evenly spaced shocks of a curve: b_k = from + floor(k (to - from) / steps),
/// k = 0..=steps.
pub fn curve_points(from_bps: i64, to_bps: i64, steps: u32) -> Vec<i64> {
    let span = to_bps - from_bps;
    (0..=i64::from(steps))
        .map(|k| from_bps + (k * span).div_euclid(i64::from(steps)))
        .collect()
}

/// One position's values at a price (§3): raw collateral C, weighted
/// collateral Cw, and debt D. An unpriced pool (`price` None) gives zeros.
pub fn position_values(
    pool: &PoolPricing,
    position: &PositionAmounts,
    price: Option<u128>,
    expo: i32,
) -> (Big, Big, Big) {
    let Some(price) = price else {
        return (Big::ZERO, Big::ZERO, Big::ZERO);
    };
    // Hardware integers first (the realistic case), then 256 bits, then the
    // 512-bit definition: the same integer steps at each width.
    if let Some((c, cw, d)) = position_values_128(pool, position, price, expo) {
        return (Big::from(c), Big::from(cw), Big::from(d));
    }
    if let Ok((c, cw, d)) = values_in::<U256>(pool, position, price, expo) {
        return (c.widen(), cw.widen(), d.widen());
    }
    let Ok(values) = values_in::<Big>(pool, position, price, expo);
    values
}

fn values_in<W: Wide>(
    pool: &PoolPricing,
    position: &PositionAmounts,
    price: u128,
    expo: i32,
) -> Result<(W, W, W), W::Err> {
    let tokens = deposit_tokens_in::<W>(position.deposit_shares, pool.deposit_index_wad)?;
    let collateral = value_wad_in(tokens, price, expo, pool.decimals)?;
    let weighted = collateral.sat_mul(W::of(pool.liquidation_threshold_wad))? / W::of(WAD);
    let debt_tokens = borrow_debt_in::<W>(
        position.borrow_principal,
        pool.borrow_index_wad,
        position.borrow_idx_snap,
    )?;
    let debt = value_wad_in(debt_tokens, price, expo, pool.decimals)?;
    Ok((collateral, weighted, debt))
}

/// A position whose pool's price moves (a curve's points): its token amounts
/// worked out once, then valued at each price with hardware integers when
/// they suffice, else exactly as `position_values` does.
pub struct Moving<'a> {
    pool: &'a PoolPricing,
    position: &'a PositionAmounts,
    expo: i32,
    tokens: Option<(u128, u128)>,
}

impl<'a> Moving<'a> {
    pub fn new(pool: &'a PoolPricing, position: &'a PositionAmounts, expo: i32) -> Self {
        Moving {
            pool,
            position,
            expo,
            tokens: position_tokens_128(pool, position),
        }
    }

    /// (C, Cw, D) at `price` (None: unpriced, zeros).
    pub fn at(&self, price: Option<u128>) -> (Big, Big, Big) {
        let Some(price) = price else {
            return (Big::ZERO, Big::ZERO, Big::ZERO);
        };
        if let Some((tokens, debt)) = self.tokens
            && let Some((c, cw, d)) = token_values_128(self.pool, tokens, debt, price, self.expo)
        {
            return (Big::from(c), Big::from(cw), Big::from(d));
        }
        position_values(self.pool, self.position, Some(price), self.expo)
    }
}

/// An owner's sums over its counted positions: Cw, C and D.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sums {
    pub weighted: Big,
    pub collateral: Big,
    pub debt: Big,
}

impl Sums {
    /// Adds one position's values (saturating, as the §3 sums do).
    pub fn add(&mut self, (collateral, weighted, debt): (Big, Big, Big)) {
        self.weighted = self.weighted.saturating_add(weighted);
        self.collateral = self.collateral.saturating_add(collateral);
        self.debt = self.debt.saturating_add(debt);
    }

    /// The §3 account health factor of these sums: in 256 bits when both
    /// sums fit (the usual case, the same integer), else at the definition's
    /// width.
    pub fn health_factor(&self) -> u128 {
        if let (Some(weighted), Some(debt)) = (fits_256(self.weighted), fits_256(self.debt))
            && let Ok(hf) = health_factor_from_sums_in(weighted, debt)
        {
            return hf;
        }
        health_factor_from_sums(self.weighted, self.debt)
    }

    /// Below 1 WAD: sum Cw < sum D.
    pub fn liquidatable(&self) -> bool {
        self.weighted < self.debt
    }

    /// Debt no collateral covers: max(0, sum D - sum C).
    pub fn bad_debt(&self) -> Big {
        self.debt.saturating_sub(self.collateral)
    }
}

/// An account's sums (§3) at its pools' current prices, unpriced pools
/// counting nothing: added in 256 bits from hardware-integer position values
/// when everything fits (the usual case), else position by position at the
/// definition's width. The same sums either way.
pub fn account_sums<'a, I>(positions: I) -> Sums
where
    I: IntoIterator<Item = (&'a PoolPricing, &'a PositionAmounts)>,
    I::IntoIter: Clone,
{
    let positions = positions.into_iter();
    if let Some(sums) = account_sums_256(positions.clone()) {
        return sums;
    }
    let mut sums = Sums::default();
    for (pool, position) in positions {
        let price = pool
            .price()
            .map(|(price, _)| u128::from(price.unsigned_abs()));
        sums.add(position_values(
            pool,
            position,
            price,
            pool.oracle_expo.unwrap_or(0),
        ));
    }
    sums
}

/// The value when it is below 2^256.
fn fits_256(value: Big) -> Option<U256> {
    let limbs = value.as_limbs();
    limbs[4..]
        .iter()
        .all(|&l| l == 0)
        .then(|| U256::from_limbs([limbs[0], limbs[1], limbs[2], limbs[3]]))
}

fn account_sums_256<'a>(
    positions: impl Iterator<Item = (&'a PoolPricing, &'a PositionAmounts)>,
) -> Option<Sums> {
    let (mut collateral, mut weighted, mut debt) = (U256::ZERO, U256::ZERO, U256::ZERO);
    for (pool, position) in positions {
        let Some((price, expo)) = pool.price() else {
            continue;
        };
        let (c, cw, d) =
            position_values_128(pool, position, u128::from(price.unsigned_abs()), expo)?;
        collateral = collateral.checked_add(U256::from(c))?;
        weighted = weighted.checked_add(U256::from(cw))?;
        debt = debt.checked_add(U256::from(d))?;
    }
    Some(Sums {
        weighted: weighted.widen(),
        collateral: collateral.widen(),
        debt: debt.widen(),
    })
}

/// On which side of the liquidation price the account is under water.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Liquidatable while the price is below it (collateral in this pool).
    Below,
    /// Liquidatable while the price is above it (debt in this pool).
    Above,
}

/// The price of one pool at which an account's health factor crosses 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiquidationPrice {
    /// In the oracle's units (same expo as the pool's price).
    pub price: Wider,
    pub direction: Direction,
    /// floor((price - current) x 10000 / current), clamped to i64.
    pub distance_bps: i64,
}

/// Wide enough for p* = N / M with every term of §10 at its largest.
pub type Wider = Uint<1024, 16>;

/// The liquidation price of pool x for an owner whose other counted pools sum
/// to `others` (exact, §3) and whose position in x is `position`, at x's
/// current `price` and `expo` (docs/design.md §10). With x's terms per unit of
/// price, without floors, cx = T lt 10^e / WAD and dx = Dt 10^e (T its deposit
/// tokens, Dt its debt tokens, e = 18 + expo - decimals), the health factor is
/// (A + cx p) / (B + dx p), 1 at p* = (B - A) / (cx - dx). None when cx = dx,
/// when p* <= 0, or when 10^e is past what value_wad takes literally.
pub fn liquidation_price(
    others: &Sums,
    pool: &PoolPricing,
    position: &PositionAmounts,
    price: i64,
    expo: i32,
) -> Option<LiquidationPrice> {
    let e = total_exponent(expo, pool.decimals);
    if e.abs() > MAX_TOTAL_EXPONENT || price <= 0 {
        return None;
    }
    let wide = |x: Big| Wider::from_limbs_slice(x.as_limbs());
    let Ok(tokens) = deposit_tokens_in::<Big>(position.deposit_shares, pool.deposit_index_wad);
    let Ok(debt_tokens) = borrow_debt_in::<Big>(
        position.borrow_principal,
        pool.borrow_index_wad,
        position.borrow_idx_snap,
    );
    let wad = Wider::from(WAD);
    let pow = Wider::from(10u8).pow(Wider::from(e.unsigned_abs()));
    let (scale_num, scale_den) = if e >= 0 {
        (pow, Wider::from(1u8))
    } else {
        (Wider::from(1u8), pow)
    };
    // p* = N / M, N = (B - A) WAD scale_den, M = scale_num (T lt - Dt WAD).
    let (a, b) = (wide(others.weighted), wide(others.debt));
    let (t_lt, dt_wad) = (
        wide(tokens) * Wider::from(pool.liquidation_threshold_wad),
        wide(debt_tokens) * wad,
    );
    let n_positive = b > a;
    let n = if n_positive { b - a } else { a - b } * wad * scale_den;
    let m_positive = t_lt > dt_wad;
    let m = if m_positive {
        t_lt - dt_wad
    } else {
        dt_wad - t_lt
    } * scale_num;
    if m.is_zero() || n.is_zero() || n_positive != m_positive {
        return None;
    }
    let (liquidation, direction) = if m_positive {
        (n.div_ceil(m), Direction::Below)
    } else {
        (n / m, Direction::Above)
    };
    let current = Wider::from(price.unsigned_abs());
    let bps = Wider::from(BPS.unsigned_abs());
    let distance_bps = if liquidation >= current {
        clamp_i64((liquidation - current) * bps / current, false)
    } else {
        clamp_i64(((current - liquidation) * bps).div_ceil(current), true)
    };
    Some(LiquidationPrice {
        price: liquidation,
        direction,
        distance_bps,
    })
}

fn clamp_i64(magnitude: Wider, negative: bool) -> i64 {
    let m = i64::try_from(magnitude).unwrap_or(i64::MAX);
    if negative { -m } else { m }
}

#[cfg(test)]
#[path = "risk_tests.rs"]
mod tests;
