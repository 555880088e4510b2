//! The risk lens over the engine's memory (decisions §10): every owner
//! re-scored exactly at shocked prices, a pool's liquidation curve, and the
//! price at which each position's account crosses 1. The math is
//! `domain::risk`'s; this walks the owners and pools the engine holds.
//!
//! An owner none of whose pools is shocked keeps its current standing; when
//! every pool it holds has a liquidation threshold of at most 1 WAD, a healthy
//! such owner also has no bad debt (C >= Cw >= D), so only the shocked pools'
//! members and the owners already under water are re-scored: exact, and the
//! cost of a shock is that of the pools it touches.

use bytes::Bytes;

use super::view::OwnerView;
use super::{Engine, Held, PoolEntry, PoolId};
use crate::domain::liquidation::{Quote, QuoteInput, best_quote, health_factor_with_confidence};
use crate::domain::pubkey::Pubkey;
use crate::domain::risk::{
    LiquidationPrice, Sums, curve_points, liquidation_price, position_values, shocked_price,
};
use crate::domain::wad::{Big, PoolPricing, WAD};
use crate::error::{ApiError, ApiResult};
use crate::wire::liquidations::LiquidationQuote;
use crate::wire::risk::{
    self as wire, CurveResponse, LiquidationPriceWire, ShockResponse, ShockedPool,
};

/// One pool's shock as asked: its address and change in basis points.
pub type ShockRequest = (Pubkey, i64);

/// What a shock does to the book (decisions §10), before rendering.
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
}

/// One pool's liquidation curve (decisions §10), before rendering.
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

/// A position's (C, Cw, D) at some prices.
type Values = (Big, Big, Big);

/// A pool's prices for one computation: its current one, or its shocked one.
struct Prices<'a> {
    engine: &'a Engine,
    shocked: Vec<(PoolId, Option<u128>)>,
}

impl Prices<'_> {
    fn shocked(&self, id: PoolId) -> Option<Option<u128>> {
        self.shocked.iter().find(|(s, _)| *s == id).map(|(_, p)| *p)
    }

    /// (current values, values at the shocked prices) of one position.
    fn values(&self, p: &Held) -> Option<(Values, Values)> {
        let pool = self.engine.pools.get(&p.pool)?;
        let pricing = &pool.state.pricing;
        let expo = pricing.oracle_expo.unwrap_or(0);
        let current = current_price(pricing);
        let now = position_values(pricing, &p.amounts, current, expo);
        let after = match self.shocked(p.pool) {
            Some(price) => position_values(pricing, &p.amounts, price, expo),
            None => now,
        };
        Some((now, after))
    }
}

/// The pool's price as §3 counts it (set, positive, with an exponent).
fn current_price(pricing: &PoolPricing) -> Option<u128> {
    pricing.price().map(|(p, _)| u128::from(p.unsigned_abs()))
}

impl Engine {
    /// A shock of each given pool by its basis points: every owner re-scored.
    /// A pool not in the index is 404 `not found`; one with no oracle price
    /// 400 `invalid`.
    pub fn shock(&self, shocks: &[ShockRequest], limit: usize) -> ApiResult<ShockOutcome> {
        let mut prices = Prices {
            engine: self,
            shocked: Vec::with_capacity(shocks.len()),
        };
        let mut shock = Vec::with_capacity(shocks.len());
        for (pool, bps) in shocks {
            let id = *self.pool_ids.get(pool).ok_or(ApiError::NotFound)?;
            let (price, expo) = self.pools[&id]
                .state
                .pricing
                .price()
                .ok_or(ApiError::Invalid)?;
            let after = shocked_price(price, *bps);
            prices.shocked.push((id, after));
            shock.push((*pool, *bps, after, expo));
        }
        // Who is re-scored: the shocked pools' members and every owner under
        // water; an owner outside both keeps its standing and has no bad debt
        // unless one of its pools weighs collateral above 1 WAD.
        let mut rescored = vec![false; self.owners.len()];
        for (id, _) in &prices.shocked {
            for slot in &self.pools[id].members {
                rescored[*slot as usize] = true;
            }
        }
        for (_, key) in &self.ranking {
            if let Some(slot) = self.index.get(key) {
                rescored[*slot as usize] = true;
            }
        }
        let generous = self
            .pools
            .values()
            .any(|p| p.state.pricing.liquidation_threshold_wad > WAD);
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
        let mut newly: Vec<(u128, String, Pubkey, u128)> = Vec::new();
        for (slot, owner) in self.resident() {
            let priced = owner.positions.iter().any(|p| {
                self.pools
                    .get(&p.pool)
                    .is_some_and(|pool| pool.state.pricing.price().is_some())
            });
            out.owners += u64::from(priced);
            if !rescored[slot as usize] && !generous {
                continue; // healthy, unshocked: not liquidatable, no bad debt
            }
            let (mut now, mut after) = (Sums::default(), Sums::default());
            for p in &owner.positions {
                if let Some((n, a)) = prices.values(p) {
                    now.add(n);
                    after.add(a);
                }
            }
            out.liquidatable_before += u64::from(now.liquidatable());
            out.bad_debt_value_wad_after += after.bad_debt();
            if !after.liquidatable() {
                continue;
            }
            out.liquidatable_after += 1;
            out.debt_value_wad_liquidatable_after += after.debt;
            if let Some((quote, _)) = self.quote_at(&prices, &owner.positions) {
                out.profit_value_wad_after += quote.profit_value_wad;
            }
            if !now.liquidatable() {
                out.newly_liquidatable += 1;
                newly.push((
                    after.health_factor(),
                    owner.key.to_string(),
                    owner.key,
                    owner.hf,
                ));
            }
        }
        newly.sort_unstable();
        out.accounts = newly
            .into_iter()
            .take(limit)
            .map(|(shocked, _, key, hf)| ShockedAccount {
                owner: key,
                health_factor: hf,
                shocked_health_factor: shocked,
                quote: self.index.get(&key).and_then(|slot| {
                    self.quote_at(&prices, &self.owners[*slot as usize].positions)
                }),
            })
            .collect();
        Ok(out)
    }

    /// The liquidation curve of pool `pool`: its members re-scored with the
    /// pool alone shocked to each point between `from_bps` and `to_bps`.
    pub fn curve(
        &self,
        pool: &Pubkey,
        from_bps: i64,
        to_bps: i64,
        steps: u32,
    ) -> ApiResult<CurveOutcome> {
        let id = *self.pool_ids.get(pool).ok_or(ApiError::NotFound)?;
        let entry = &self.pools[&id];
        let (price, expo) = entry.state.pricing.price().ok_or(ApiError::Invalid)?;
        // Each member once: what its other positions sum to never moves.
        let members: Vec<(Sums, &Held)> = entry
            .members
            .iter()
            .filter_map(|slot| {
                let owner = &self.owners[*slot as usize];
                let mut others = Sums::default();
                let mut mine = None;
                for p in &owner.positions {
                    if p.pool == id {
                        mine = Some(p);
                    } else if let Some(pool) = self.pools.get(&p.pool) {
                        let pricing = &pool.state.pricing;
                        others.add(position_values(
                            pricing,
                            &p.amounts,
                            current_price(pricing),
                            pricing.oracle_expo.unwrap_or(0),
                        ));
                    }
                }
                Some((others, mine?))
            })
            .collect();
        let pricing = &entry.state.pricing;
        let points = curve_points(from_bps, to_bps, steps)
            .into_iter()
            .map(|bps| {
                let at = shocked_price(price, bps);
                let mut point = CurvePoint {
                    change_bps: bps,
                    price: at,
                    liquidatable: 0,
                    debt_value_wad_liquidatable: Big::ZERO,
                    bad_debt_value_wad: Big::ZERO,
                };
                for (others, held) in &members {
                    let mut sums = *others;
                    sums.add(position_values(pricing, &held.amounts, at, expo));
                    point.bad_debt_value_wad += sums.bad_debt();
                    if sums.liquidatable() {
                        point.liquidatable += 1;
                        point.debt_value_wad_liquidatable += sums.debt;
                    }
                }
                point
            })
            .collect();
        Ok(CurveOutcome {
            pool: *pool,
            price,
            expo,
            owners: members.len() as u64,
            points,
        })
    }

    /// Every resident owner with its slot.
    fn resident(&self) -> impl Iterator<Item = (u32, &super::Owner)> {
        self.index
            .values()
            .map(|slot| (*slot, &self.owners[*slot as usize]))
    }

    /// An owner's best §8 quote at the given prices, and its health factor
    /// priced with confidence there.
    fn quote_at(&self, prices: &Prices<'_>, positions: &[Held]) -> Option<(Quote, u128)> {
        // The shocked pools' pricing with their shocked price (an i64, as an
        // oracle's; a shocked price past it is an oracle's largest).
        let shocked: Vec<(PoolId, PoolPricing)> = prices
            .shocked
            .iter()
            .map(|(id, price)| {
                let mut pricing = self.pools[id].state.pricing;
                pricing.oracle_price = price.map(|p| i64::try_from(p).unwrap_or(i64::MAX));
                (*id, pricing)
            })
            .collect();
        let inputs: Vec<QuoteInput<'_>> = positions
            .iter()
            .filter_map(|p| {
                let pool = self.pools.get(&p.pool)?;
                let pricing = shocked
                    .iter()
                    .find(|(id, _)| *id == p.pool)
                    .map_or(&pool.state.pricing, |(_, pricing)| pricing);
                Some(QuoteInput {
                    pool: &pool.state.address,
                    position: &p.address,
                    pricing,
                    terms: &pool.state.terms,
                    amounts: &p.amounts,
                })
            })
            .collect();
        let quote = best_quote(&inputs, None, None)?;
        Some((quote, health_factor_with_confidence(&inputs)))
    }
}

/// Each position's liquidation price (decisions §10), in the view's order:
/// against the exact §3 sums of the owner's other counted pools at current
/// prices; None for an unpriced pool or when no positive price crosses.
pub fn liquidation_prices(view: &OwnerView<'_>) -> Vec<Option<(LiquidationPrice, i32)>> {
    let values: Vec<Values> = view
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

/// GET /api/risk/shock, rendered.
pub fn shock_body(
    engine: &Engine,
    shocks: &[ShockRequest],
    limit: usize,
    now: i64,
    max_oracle_age: i64,
) -> ApiResult<Bytes> {
    let outcome = engine.shock(shocks, limit)?;
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
                }),
            })
            .collect(),
    };
    render(&response)
}

/// GET /api/risk/curve, rendered.
pub fn curve_body(
    engine: &Engine,
    pool: &Pubkey,
    from_bps: i64,
    to_bps: i64,
    steps: u32,
) -> ApiResult<Bytes> {
    let outcome = engine.curve(pool, from_bps, to_bps, steps)?;
    render(&CurveResponse {
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

fn render(value: &impl serde::Serialize) -> ApiResult<Bytes> {
    serde_json::to_vec(value)
        .map(Bytes::from)
        .map_err(ApiError::internal)
}

#[cfg(test)]
#[path = "risk_tests.rs"]
mod tests;
