//! The risk lens over the engine's memory (docs/design.md §10): every owner
//! re-scored exactly at shocked prices, a pool's liquidation curve, and the
//! price at which each position's account crosses 1. The math is
//! `domain::risk`'s; this walks the owners and pools the engine holds.
//!
//! An owner none of whose pools is shocked keeps its current standing; when
//! every pool it holds has a liquidation threshold of at most 1 WAD, a healthy
//! such owner also has no bad debt (C >= Cw >= D), so only the shocked pools'
//! members and the owners already under water are re-scored: exact, and the
//! cost of a shock is that of the pools it touches.

use super::parallel::par_chunks;
use super::pools::PoolTable;
use super::view::OwnerView;
use super::{Engine, Held, PoolEntry, PoolId};
use lendex_domain::liquidation::{Quote, QuoteInput, best_quote, health_factor_with_confidence};
use lendex_domain::pubkey::Pubkey;
use lendex_domain::risk::{
    LiquidationPrice, Moving, Sums, curve_points, liquidation_price, position_values, shocked_price,
};
use lendex_domain::wad::{Big, PoolPricing, WAD};
use lendex_wire::liquidations::LiquidationQuote;
use lendex_wire::risk::{
    self as wire, CurveResponse, LiquidationPriceWire, ShockResponse, ShockedPool,
};

/// One pool's shock as asked: its address and change in basis points.
pub type ShockRequest = (Pubkey, i64);

/// What a shock does to the book (docs/design.md §10), before rendering.
pub struct ShockOutcome {
    /// Each shocked pool, in the request's order: (pool, change, shocked price, expo).
    pub shock: Vec<(Pubkey, i64, Option<u128>, i32)>,
    pub owners: u64,
    pub liquidatable_before: u64,
    pub liquidatable_after: u64,
    pub newly_liquidatable: u64,
    pub debt_value_wad_liquidatable_after: Big,
    pub bad_debt_value_wad_after: Big,
    pub profit_value_wad_after: Big,
    /// Up to the limit of the newly liquidatable, lowest shocked health factor
    /// first, then owner.
    pub accounts: Vec<ShockedAccount>,
}

pub struct ShockedAccount {
    pub owner: Pubkey,
    pub health_factor: u128,
    pub shocked_health_factor: u128,
    /// The owner's best §8 quote at the shocked prices, with its health factor
    /// priced with confidence there.
    pub quote: Option<(Quote, u128)>,
    /// The largest context slot among the owner's rows and pools.
    pub slot: u64,
}

/// One pool's liquidation curve (docs/design.md §10), before rendering.
pub struct CurveOutcome {
    pub pool: Pubkey,
    pub price: i64,
    pub expo: i32,
    pub owners: u64,
    pub points: Vec<CurvePoint>,
}

pub struct CurvePoint {
    pub change_bps: i64,
    pub price: Option<u128>,
    pub liquidatable: u64,
    pub debt_value_wad_liquidatable: Big,
    pub bad_debt_value_wad: Big,
}

/// What a computation needs of each pool, by the pool's dense id.
#[derive(Clone, Copy)]
struct PoolCtx<'a> {
    entry: &'a PoolEntry,
    expo: i32,
    /// Its price as §3 counts it now.
    current: Option<u128>,
    /// Its price in this computation (shocked, or current).
    after: Option<u128>,
    /// Its pricing for quotes in this computation (an oracle's price is an
    /// i64: a shocked price past it is the largest one).
    quoted: PoolPricing,
}

/// One chunk's share of a shock.
#[derive(Default)]
struct Tally {
    owners: u64,
    before: u64,
    after: u64,
    debt: Big,
    bad: Big,
    profit: Big,
    /// (shocked health factor, owner, current health factor)
    newly: Vec<(u128, Pubkey, u128)>,
}

/// The pool's price as §3 counts it (set, positive, with an exponent).
fn current_price(pricing: &PoolPricing) -> Option<u128> {
    pricing.price().map(|(p, _)| u128::from(p.unsigned_abs()))
}

/// Every pool's context, with `shocked` pools at their shocked prices.
fn contexts<'a>(
    pools: &'a PoolTable,
    shocked: &[(PoolId, Option<u128>)],
) -> Vec<Option<PoolCtx<'a>>> {
    let mut out = vec![None; pools.id_bound()];
    for (id, entry) in pools.entries() {
        let pricing = &entry.state.pricing;
        let current = current_price(pricing);
        let after = shocked
            .iter()
            .find(|(s, _)| *s == id)
            .map_or(current, |(_, price)| *price);
        let mut quoted = *pricing;
        if after != current {
            quoted.oracle_price = after.map(|p| i64::try_from(p).unwrap_or(i64::MAX));
        }
        out[id as usize] = Some(PoolCtx {
            entry,
            expo: pricing.oracle_expo.unwrap_or(0),
            current,
            after,
            quoted,
        });
    }
    out
}

/// A shock of each given pool by its basis points: every owner re-scored.
/// A pool not in the index is 404 `not found`; one with no oracle price
/// 400 `invalid`. The owners are shared out over the cores.
pub fn shock(
    engine: &Engine,
    shocks: &[ShockRequest],
    limit: usize,
) -> Result<ShockOutcome, RiskError> {
    let (pools, owners) = engine.book();
    let mut shocked = Vec::with_capacity(shocks.len());
    let mut shock = Vec::with_capacity(shocks.len());
    for (pool, bps) in shocks {
        let id = pools.id_of(pool).ok_or(RiskError::UnknownPool)?;
        let (price, expo) = (pools.get(id).expect("ids map to pools"))
            .state
            .pricing
            .price()
            .ok_or(RiskError::Unpriced)?;
        let after = shocked_price(price, *bps);
        shocked.push((id, after));
        shock.push((*pool, *bps, after, expo));
    }
    let ctx = contexts(pools, &shocked);
    // Who is re-scored: the shocked pools' members and every owner under
    // water; any other keeps its standing, and has no bad debt unless one
    // of the pools weighs collateral above 1 WAD.
    let mut rescored = vec![false; owners.slot_bound()];
    for (id, _) in &shocked {
        for slot in pools.members(*id) {
            rescored[slot as usize] = true;
        }
    }
    for (_, key) in engine.unhealthy() {
        if let Some(slot) = owners.slot_of(&key) {
            rescored[slot as usize] = true;
        }
    }
    let generous = pools
        .entries()
        .any(|(_, p)| p.state.pricing.liquidation_threshold_wad > WAD);
    let slots: Vec<u32> = owners.slots().collect();
    let (ctx, rescored) = (&ctx, &rescored);
    let tallies = par_chunks(&slots, |part| {
        let mut t = Tally::default();
        for &slot in part {
            let owner = owners.get(slot);
            let priced = owner
                .positions
                .iter()
                .any(|p| ctx[p.pool as usize].is_some_and(|c| c.current.is_some()));
            t.owners += u64::from(priced);
            let before = owner.hf < WAD;
            t.before += u64::from(before);
            if !rescored[slot as usize] && !generous {
                continue; // healthy, unshocked: not liquidatable, no bad debt
            }
            let mut after = Sums::default();
            for p in owner.positions.iter() {
                if let Some(c) = ctx[p.pool as usize] {
                    after.add(position_values(
                        &c.entry.state.pricing,
                        &p.amounts,
                        c.after,
                        c.expo,
                    ));
                }
            }
            t.bad += after.bad_debt();
            if !after.liquidatable() {
                continue;
            }
            t.after += 1;
            t.debt += after.debt;
            if let Some(quote) = best_quote(&inputs_at(ctx, &owner.positions), None, None) {
                t.profit += quote.profit_value_wad;
            }
            if !before {
                t.newly.push((after.health_factor(), owner.key, owner.hf));
            }
        }
        t
    });
    let mut out = ShockOutcome {
        shock,
        owners: 0,
        liquidatable_before: 0,
        liquidatable_after: 0,
        newly_liquidatable: 0,
        debt_value_wad_liquidatable_after: Big::ZERO,
        bad_debt_value_wad_after: Big::ZERO,
        profit_value_wad_after: Big::ZERO,
        accounts: Vec::new(),
    };
    let mut newly = Vec::new();
    for t in tallies {
        out.owners += t.owners;
        out.liquidatable_before += t.before;
        out.liquidatable_after += t.after;
        out.debt_value_wad_liquidatable_after += t.debt;
        out.bad_debt_value_wad_after += t.bad;
        out.profit_value_wad_after += t.profit;
        newly.extend(t.newly);
    }
    out.newly_liquidatable = newly.len() as u64;
    // Lowest shocked health factor first, then owner (base58): only the
    // first `limit` are ordered in full.
    newly.sort_unstable_by_key(|(hf, ..)| *hf);
    let cut = match newly.get(limit) {
        Some((hf, ..)) => newly.partition_point(|(h, ..)| h <= hf),
        None => newly.len(),
    };
    let mut first: Vec<(u128, String, Pubkey, u128)> = newly[..cut]
        .iter()
        .map(|(shocked, key, hf)| (*shocked, key.to_string(), *key, *hf))
        .collect();
    first.sort_unstable();
    out.accounts = first
        .into_iter()
        .take(limit)
        .map(|(shocked, _, key, hf)| ShockedAccount {
            owner: key,
            health_factor: hf,
            shocked_health_factor: shocked,
            quote: owners
                .by_key(&key)
                .and_then(|owner| quote_at(ctx, &owner.positions)),
            slot: engine.peek(&key).map_or(0, |view| view.slot()),
        })
        .collect();
    Ok(out)
}

/// The liquidation curve of pool `pool`: its members re-scored with the
/// pool alone moved to each point between `from_bps` and `to_bps`. The
/// members are shared out over the cores; each one's other pools are
/// summed once, its position in the pool valued at every point.
pub fn curve(
    engine: &Engine,
    pool: &Pubkey,
    from_bps: i64,
    to_bps: i64,
    steps: u32,
) -> Result<CurveOutcome, RiskError> {
    let (pools, owners) = engine.book();
    let id = pools.id_of(pool).ok_or(RiskError::UnknownPool)?;
    let entry = pools.get(id).expect("ids map to pools");
    let (price, expo) = entry.state.pricing.price().ok_or(RiskError::Unpriced)?;
    let ctx = contexts(pools, &[]);
    let bps = curve_points(from_bps, to_bps, steps);
    let prices: Vec<Option<u128>> = bps.iter().map(|b| shocked_price(price, *b)).collect();
    let members = pools.members(id);
    let (ctx, prices) = (&ctx, &prices);
    let tallies = par_chunks(&members, |part| {
        let mut points = vec![(0u64, Big::ZERO, Big::ZERO); prices.len()];
        for &slot in part {
            let mut others = Sums::default();
            let mut mine = None;
            for p in owners.get(slot).positions.iter() {
                if p.pool == id {
                    mine = Some(p);
                } else if let Some(c) = ctx[p.pool as usize] {
                    others.add(position_values(
                        &c.entry.state.pricing,
                        &p.amounts,
                        c.current,
                        c.expo,
                    ));
                }
            }
            let Some(mine) = mine else {
                continue;
            };
            let moving = Moving::new(&entry.state.pricing, &mine.amounts, expo);
            for (point, at) in points.iter_mut().zip(prices) {
                let mut sums = others;
                sums.add(moving.at(*at));
                point.2 += sums.bad_debt();
                if sums.liquidatable() {
                    point.0 += 1;
                    point.1 += sums.debt;
                }
            }
        }
        points
    });
    let mut points: Vec<CurvePoint> = bps
        .iter()
        .zip(prices)
        .map(|(b, p)| CurvePoint {
            change_bps: *b,
            price: *p,
            liquidatable: 0,
            debt_value_wad_liquidatable: Big::ZERO,
            bad_debt_value_wad: Big::ZERO,
        })
        .collect();
    for part in tallies {
        for (point, (n, debt, bad)) in points.iter_mut().zip(part) {
            point.liquidatable += n;
            point.debt_value_wad_liquidatable += debt;
            point.bad_debt_value_wad += bad;
        }
    }
    Ok(CurveOutcome {
        pool: *pool,
        price,
        expo,
        owners: members.len() as u64,
        points,
    })
}

/// An owner's best §8 quote at a computation's prices, and its health factor
/// priced with confidence there.
fn quote_at(ctx: &[Option<PoolCtx<'_>>], positions: &[Held]) -> Option<(Quote, u128)> {
    let inputs = inputs_at(ctx, positions);
    let quote = best_quote(&inputs, None, None)?;
    Some((quote, health_factor_with_confidence(&inputs)))
}

/// An owner's positions as §8 reads them, at a computation's prices.
fn inputs_at<'a>(ctx: &'a [Option<PoolCtx<'a>>], positions: &'a [Held]) -> Vec<QuoteInput<'a>> {
    positions
        .iter()
        .filter_map(|p| {
            let c = ctx[p.pool as usize].as_ref()?;
            Some(QuoteInput {
                pool: &c.entry.state.address,
                position: &p.address,
                pricing: &c.quoted,
                terms: &c.entry.state.terms,
                amounts: &p.amounts,
            })
        })
        .collect()
}

/// Each position's liquidation price (docs/design.md §10), in the view's order:
/// against the exact §3 sums of the owner's other counted pools at current
/// prices; None for an unpriced pool or when no positive price crosses.
pub fn liquidation_prices(view: &OwnerView<'_>) -> Vec<Option<(LiquidationPrice, i32)>> {
    let values: Vec<(Big, Big, Big)> = view
        .positions
        .iter()
        .map(|(p, pool)| {
            let pricing = &pool.state.pricing;
            position_values(
                pricing,
                &p.amounts,
                current_price(pricing),
                pricing.oracle_expo.unwrap_or(0),
            )
        })
        .collect();
    view.positions
        .iter()
        .enumerate()
        .map(|(i, (p, pool))| {
            let (price, expo) = pool.state.pricing.price()?;
            let mut others = Sums::default();
            for (j, v) in values.iter().enumerate() {
                if j != i {
                    others.add(*v);
                }
            }
            liquidation_price(&others, &pool.state.pricing, &p.amounts, price, expo)
                .map(|lp| (lp, expo))
        })
        .collect()
}

/// The owner's liquidation price nearest its pool's current price (smallest
/// |distance_bps|, then pool address ascending), with that pool.
pub fn nearest_liquidation<'a>(
    view: &OwnerView<'a>,
) -> Option<(&'a PoolEntry, LiquidationPrice, i32)> {
    let prices = liquidation_prices(view);
    view.positions
        .iter()
        .zip(prices)
        .filter_map(|((_, pool), lp)| lp.map(|(lp, expo)| (*pool, lp, expo)))
        .min_by(|a, b| {
            a.1.distance_bps
                .unsigned_abs()
                .cmp(&b.1.distance_bps.unsigned_abs())
                .then_with(|| a.0.address_text.cmp(&b.0.address_text))
        })
}

/// GET /api/risk/shock's answer.
pub fn shock_response(
    engine: &Engine,
    shocks: &[ShockRequest],
    limit: usize,
    now: i64,
    max_oracle_age: i64,
) -> Result<ShockResponse, RiskError> {
    let outcome = shock(engine, shocks, limit)?;
    let stale = |pool: &Pubkey| {
        engine
            .pool(pool)
            .is_some_and(|p| p.oracle_stale(now, max_oracle_age))
    };
    let response = ShockResponse {
        shock: outcome
            .shock
            .iter()
            .map(|(pool, bps, price, expo)| ShockedPool {
                pool: pool.to_string(),
                change_bps: *bps,
                price: price.unwrap_or(0).to_string(),
                expo: *expo,
            })
            .collect(),
        owners: outcome.owners,
        liquidatable_before: outcome.liquidatable_before,
        liquidatable_after: outcome.liquidatable_after,
        newly_liquidatable: outcome.newly_liquidatable,
        debt_value_wad_liquidatable_after: outcome.debt_value_wad_liquidatable_after.to_string(),
        bad_debt_value_wad_after: outcome.bad_debt_value_wad_after.to_string(),
        profit_value_wad_after: outcome.profit_value_wad_after.to_string(),
        accounts: outcome
            .accounts
            .into_iter()
            .map(|a| wire::ShockedAccount {
                owner: a.owner.to_string(),
                account_health_factor_wad: a.health_factor.to_string(),
                shocked_health_factor_wad: a.shocked_health_factor.to_string(),
                liquidation: a.quote.map(|(q, conf)| LiquidationQuote {
                    owner: a.owner.to_string(),
                    account_health_factor_wad: a.shocked_health_factor.to_string(),
                    account_health_factor_conf_wad: conf.to_string(),
                    debt_pool: q.debt_pool.to_string(),
                    collateral_pool: q.collateral_pool.to_string(),
                    debt_position: q.debt_position.to_string(),
                    collateral_position: q.collateral_position.to_string(),
                    repay_amount: q.repay_amount.to_string(),
                    seize_amount: q.seize_amount.to_string(),
                    repay_value_wad: q.repay_value_wad.to_string(),
                    seize_value_wad: q.seize_value_wad.to_string(),
                    protocol_fee_value_wad: q.protocol_fee_value_wad.to_string(),
                    profit_value_wad: q.profit_value_wad.to_string(),
                    oracle_stale: stale(&q.debt_pool) || stale(&q.collateral_pool),
                    slot: a.slot,
                    commitment: engine.commitment(),
                    // The risk lens values at the pools' own prices.
                    oracle: engine.oracle(),
                    crank: None,
                }),
            })
            .collect(),
    };
    Ok(response)
}

/// GET /api/risk/curve's answer.
pub fn curve_response(
    engine: &Engine,
    pool: &Pubkey,
    from_bps: i64,
    to_bps: i64,
    steps: u32,
) -> Result<CurveResponse, RiskError> {
    let outcome = curve(engine, pool, from_bps, to_bps, steps)?;
    Ok(CurveResponse {
        pool: outcome.pool.to_string(),
        price: outcome.price.to_string(),
        expo: outcome.expo,
        owners: outcome.owners,
        points: outcome
            .points
            .into_iter()
            .map(|p| wire::CurvePoint {
                change_bps: p.change_bps,
                price: p.price.unwrap_or(0).to_string(),
                liquidatable: p.liquidatable,
                debt_value_wad_liquidatable: p.debt_value_wad_liquidatable.to_string(),
                bad_debt_value_wad: p.bad_debt_value_wad.to_string(),
            })
            .collect(),
    })
}

/// A liquidation price as the API shows it.
pub fn liquidation_price_wire(lp: &LiquidationPrice, expo: i32) -> LiquidationPriceWire {
    LiquidationPriceWire {
        price: lp.price.to_string(),
        expo,
        direction: lp.direction,
        distance_bps: lp.distance_bps,
    }
}

/// Why a shock or a curve has no answer; the HTTP edge maps each to its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RiskError {
    /// A pool that is not in the index (404 `not found`).
    UnknownPool,
    /// A pool with no oracle price to shock (400 `invalid`).
    Unpriced,
}

#[cfg(test)]
#[path = "risk_tests.rs"]
mod tests;
