//! Liquidation quotes (docs/design.md §8), exact integers with the §3 definitions:
//! for an owner under water, the (debt pool, collateral pool) pair that pays a
//! liquidator most, what to repay, what to seize, the protocol's cut and the
//! profit; and the account health factor priced with the oracle's confidence.

use std::cmp::Ordering;

use ruint::aliases::U256;

use super::pubkey::Pubkey;
use super::wad::{
    Big, MAX_TOTAL_EXPONENT, NO_DEBT_HEALTH_FACTOR, PoolPricing, PositionAmounts, WAD,
    borrow_debt_in, deposit_tokens_in, health_factor_from_sums_in, total_exponent, value_wad_in,
};
use super::wide::Wide;

/// The liquidation parameters of a pool (its on-chain fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LiquidationTerms {
    pub close_factor_wad: u128,
    pub liquidation_bonus_wad: u128,
    pub protocol_liq_fee_wad: u128,
    /// The oracle's confidence interval, in the price's units (null is 0).
    pub oracle_conf: Option<u64>,
}

/// One position of the owner with everything about its pool that §8 reads.
#[derive(Debug, Clone, Copy)]
pub struct QuoteInput<'a> {
    pub pool: &'a Pubkey,
    pub position: &'a Pubkey,
    pub pricing: &'a PoolPricing,
    pub terms: &'a LiquidationTerms,
    pub amounts: &'a PositionAmounts,
}

/// The best pair of one owner (docs/design.md §8; the owner's health factors and
/// oracle staleness are added where it is served).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quote {
    pub debt_pool: Pubkey,
    pub collateral_pool: Pubkey,
    pub debt_position: Pubkey,
    pub collateral_position: Pubkey,
    /// Debt-token base units.
    pub repay_amount: Big,
    /// Collateral-token base units.
    pub seize_amount: Big,
    pub repay_value_wad: Big,
    pub seize_value_wad: Big,
    pub protocol_fee_value_wad: Big,
    pub profit_value_wad: Big,
}

/// A priced pool: (price, expo) with price > 0.
fn priced(p: &PoolPricing) -> Option<(u128, i32)> {
    p.price()
        .map(|(price, expo)| (u128::from(price.unsigned_abs()), expo))
}

fn value<W: Wide>(amount: W, p: &PoolPricing) -> Result<W, W::Err> {
    match priced(p) {
        Some((price, expo)) => value_wad_in(amount, price, expo, p.decimals),
        None => Ok(W::ZERO),
    }
}

/// The largest amount `a` whose value_wad at this pool's price is at most `v`.
pub fn tokens_of(v: Big, p: &PoolPricing) -> Big {
    let Ok(tokens) = tokens_of_in(v, p);
    tokens
}

fn tokens_of_in<W: Wide>(v: W, p: &PoolPricing) -> Result<W, W::Err> {
    let Some((price, expo)) = priced(p) else {
        return Ok(W::ZERO);
    };
    let e = total_exponent(expo, p.decimals);
    let price = W::of(price);
    if e >= 0 {
        if e > MAX_TOTAL_EXPONENT {
            // value_wad saturates for any a > 0 (only an all-ones v admits more).
            return if v.is_max() {
                W::saturated()
            } else {
                Ok(W::ZERO)
            };
        }
        Ok(v / price.sat_mul(W::pow10(e as u32)?)?)
    } else if -e > MAX_TOTAL_EXPONENT {
        W::saturated() // value_wad is 0 for every amount
    } else {
        // value_wad floors a x price / 10^-e: the bound is ((v + 1) 10^-e - 1) / price.
        Ok(v.sat_add(W::ONE)?
            .sat_mul(W::pow10((-e) as u32)?)?
            .sub(W::ONE)?
            / price)
    }
}

/// The quote for repaying `d`'s debt and seizing `c`'s collateral; None when
/// the pair does not qualify (unpriced, no debt, no collateral, nothing to repay).
pub fn pair_quote(d: &QuoteInput<'_>, c: &QuoteInput<'_>) -> Option<Quote> {
    // 256 bits when nothing overflows (the usual case), else the definition's 512.
    let amounts = match pair_amounts::<U256>(d, c) {
        Ok(amounts) => amounts.map(|a| a.widen()),
        Err(_) => {
            let Ok(amounts) = pair_amounts::<Big>(d, c);
            amounts
        }
    }?;
    Some(Quote {
        debt_pool: *d.pool,
        collateral_pool: *c.pool,
        debt_position: *d.position,
        collateral_position: *c.position,
        repay_amount: amounts.repay,
        seize_amount: amounts.seize,
        repay_value_wad: amounts.repay_value,
        seize_value_wad: amounts.seize_value,
        protocol_fee_value_wad: amounts.fee,
        profit_value_wad: amounts.profit,
    })
}

/// A quote's numbers at one width.
struct Amounts<W> {
    repay: W,
    seize: W,
    repay_value: W,
    seize_value: W,
    fee: W,
    profit: W,
}

impl<W: Wide> Amounts<W> {
    fn widen(self) -> Amounts<Big> {
        Amounts {
            repay: self.repay.widen(),
            seize: self.seize.widen(),
            repay_value: self.repay_value.widen(),
            seize_value: self.seize_value.widen(),
            fee: self.fee.widen(),
            profit: self.profit.widen(),
        }
    }
}

/// §8's steps for one pair at width `W`.
fn pair_amounts<W: Wide>(
    d: &QuoteInput<'_>,
    c: &QuoteInput<'_>,
) -> Result<Option<Amounts<W>>, W::Err> {
    if priced(d.pricing).is_none() || priced(c.pricing).is_none() {
        return Ok(None);
    }
    let debt = borrow_debt_in::<W>(
        d.amounts.borrow_principal,
        d.pricing.borrow_index_wad,
        d.amounts.borrow_idx_snap,
    )?;
    let collateral = deposit_tokens_in::<W>(c.amounts.deposit_shares, c.pricing.deposit_index_wad)?;
    if debt == W::ZERO || collateral == W::ZERO {
        return Ok(None);
    }
    let wad = W::of(WAD);
    let with_bonus = wad.add(W::of(c.terms.liquidation_bonus_wad))?;
    let mut repay = debt.mul(W::of(d.terms.close_factor_wad))? / wad;
    let mut repay_value = value(repay, d.pricing)?;
    let mut seize_value = repay_value.mul(with_bonus)? / wad;
    let collateral_value = value(collateral, c.pricing)?;
    if seize_value > collateral_value {
        repay = tokens_of_in(collateral_value.mul(wad)? / with_bonus, d.pricing)?;
        repay_value = value(repay, d.pricing)?;
        seize_value = repay_value.mul(with_bonus)? / wad;
    }
    if repay == W::ZERO {
        return Ok(None);
    }
    let seize = tokens_of_in(seize_value, c.pricing)?.min(collateral);
    let bonus = seize_value.sub(repay_value)?;
    let fee = bonus.mul(W::of(c.terms.protocol_liq_fee_wad))? / wad;
    Ok(Some(Amounts {
        repay,
        seize,
        repay_value,
        seize_value,
        fee,
        // A fee above 1 WAD (not a sane pool) would take more than the bonus.
        profit: bonus.saturating_sub(fee),
    }))
}

/// The §8 order of pairs: largest profit, then largest repay value, then debt
/// pool, then collateral pool (ascending base58 strings). `Less` is better.
pub fn better(a: &Quote, b: &Quote) -> Ordering {
    b.profit_value_wad
        .cmp(&a.profit_value_wad)
        .then(b.repay_value_wad.cmp(&a.repay_value_wad))
        .then_with(|| a.debt_pool.to_string().cmp(&b.debt_pool.to_string()))
        .then_with(|| {
            a.collateral_pool
                .to_string()
                .cmp(&b.collateral_pool.to_string())
        })
}

/// The owner's best pair, optionally only pairs with the given pools.
pub fn best_quote(
    positions: &[QuoteInput<'_>],
    debt_pool: Option<&Pubkey>,
    collateral_pool: Option<&Pubkey>,
) -> Option<Quote> {
    let mut best: Option<Quote> = None;
    for d in positions {
        if debt_pool.is_some_and(|p| p != d.pool) || d.amounts.borrow_principal == 0 {
            continue;
        }
        for c in positions {
            if collateral_pool.is_some_and(|p| p != c.pool) || c.amounts.deposit_shares == 0 {
                continue;
            }
            if let Some(q) = pair_quote(d, c)
                && best
                    .as_ref()
                    .is_none_or(|b| better(&q, b) == Ordering::Less)
            {
                best = Some(q);
            }
        }
    }
    best
}

/// The §3 account health factor with collateral priced at max(price - conf, 0)
/// and debt at price + conf; which pools count is decided by the plain price.
pub fn health_factor_with_confidence(positions: &[QuoteInput<'_>]) -> u128 {
    match health_factor_with_confidence_in::<U256>(positions) {
        Ok(hf) => hf,
        Err(_) => {
            let Ok(hf) = health_factor_with_confidence_in::<Big>(positions);
            hf
        }
    }
}

fn health_factor_with_confidence_in<W: Wide>(positions: &[QuoteInput<'_>]) -> Result<u128, W::Err> {
    let (mut collateral, mut debt) = (W::ZERO, W::ZERO);
    let wad = W::of(WAD);
    for p in positions {
        let Some((price, expo)) = priced(p.pricing) else {
            continue;
        };
        let conf = u128::from(p.terms.oracle_conf.unwrap_or(0));
        let decimals = p.pricing.decimals;
        let tokens = deposit_tokens_in::<W>(p.amounts.deposit_shares, p.pricing.deposit_index_wad)?;
        let low = value_wad_in(tokens, price.saturating_sub(conf), expo, decimals)?;
        collateral =
            collateral.sat_add(low.sat_mul(W::of(p.pricing.liquidation_threshold_wad))? / wad)?;
        let owed = borrow_debt_in::<W>(
            p.amounts.borrow_principal,
            p.pricing.borrow_index_wad,
            p.amounts.borrow_idx_snap,
        )?;
        debt = debt.sat_add(value_wad_in(owed, price + conf, expo, decimals)?)?;
    }
    if debt == W::ZERO {
        return Ok(NO_DEBT_HEALTH_FACTOR);
    }
    health_factor_from_sums_in(collateral, debt)
}

#[cfg(test)]
#[path = "liquidation_tests.rs"]
mod tests;
