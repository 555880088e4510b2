//! What liquidators act on, rendered from the engine: liquidation quotes
//! (GET /api/liquidations, docs/design.md §8) and the at-risk watch list
//! (GET /api/positions/at-risk).

use super::Engine;
use super::view::{OwnerView, crank_list};
use lendex_domain::liquidation::Quote;
use lendex_domain::pubkey::Pubkey;
use lendex_wire::liquidations::NearestLiquidation;
use lendex_wire::liquidations::{
    AtRiskAccount, AtRiskResponse, LiquidationQuote, LiquidationsResponse,
};

/// The wire form of an owner's quote.
pub fn quote_wire(
    engine: &Engine,
    view: &OwnerView<'_>,
    quote: &Quote,
    now: i64,
    max_oracle_age: i64,
) -> LiquidationQuote {
    let stale = |pool: &Pubkey| {
        engine
            .pool(pool)
            .is_some_and(|p| p.oracle_stale(now, max_oracle_age))
    };
    LiquidationQuote {
        owner: view.owner.to_string(),
        account_health_factor_wad: view.health_factor.to_string(),
        account_health_factor_conf_wad: view.health_factor_with_confidence().to_string(),
        debt_pool: quote.debt_pool.to_string(),
        collateral_pool: quote.collateral_pool.to_string(),
        debt_position: quote.debt_position.to_string(),
        collateral_position: quote.collateral_position.to_string(),
        repay_amount: quote.repay_amount.to_string(),
        seize_amount: quote.seize_amount.to_string(),
        repay_value_wad: quote.repay_value_wad.to_string(),
        seize_value_wad: quote.seize_value_wad.to_string(),
        protocol_fee_value_wad: quote.protocol_fee_value_wad.to_string(),
        profit_value_wad: quote.profit_value_wad.to_string(),
        oracle_stale: stale(&quote.debt_pool) || stale(&quote.collateral_pool),
        slot: view.slot(),
        commitment: engine.commitment(),
        oracle: engine.oracle(),
        crank: crank_list(engine, view),
    }
}

/// GET /api/liquidations: filters of the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QuoteFilter {
    pub debt_pool: Option<Pubkey>,
    pub collateral_pool: Option<Pubkey>,
    pub min_profit_wad: u128,
    pub limit: usize,
}

/// One quote per owner under water, most profitable first (then by owner).
pub fn liquidations(
    engine: &Engine,
    f: &QuoteFilter,
    now: i64,
    max_oracle_age: i64,
) -> LiquidationsResponse {
    let filtered = f.debt_pool.is_some() || f.collateral_pool.is_some();
    let min_profit = lendex_domain::wad::Big::from(f.min_profit_wad);
    let mut chosen: Vec<(Quote, Pubkey)> = Vec::new();
    for (_, owner) in engine.unhealthy() {
        let Some(view) = engine.peek(&owner) else {
            continue;
        };
        // The stored quote is the best over all pairs; a pool filter needs the
        // best among the pairs it allows.
        let quote = if filtered {
            view.quote_with(f.debt_pool.as_ref(), f.collateral_pool.as_ref())
        } else {
            view.quote.cloned()
        };
        if let Some(q) = quote.filter(|q| q.profit_value_wad >= min_profit) {
            chosen.push((q, owner));
        }
    }
    chosen.sort_by_key(|(q, _)| std::cmp::Reverse(q.profit_value_wad));
    by_owner_within_ties(&mut chosen, |(q, _)| q.profit_value_wad, |(_, o)| *o);
    let liquidations = chosen
        .iter()
        .take(f.limit)
        .filter_map(|(q, owner)| {
            let view = engine.peek(owner)?;
            Some(quote_wire(engine, &view, q, now, max_oracle_age))
        })
        .collect();
    LiquidationsResponse { liquidations }
}

/// Owners with 1 WAD <= health factor < `below`, lowest first (then by owner).
pub fn at_risk(engine: &Engine, below: u128, limit: usize) -> AtRiskResponse {
    // The first `limit`, and any owner tied with the last of them.
    let mut listed: Vec<(u128, Pubkey)> = Vec::new();
    for (hf, owner) in engine.watched_below(below) {
        if listed.len() >= limit && listed.last().is_some_and(|(last, _)| *last != hf) {
            break;
        }
        listed.push((hf, owner));
    }
    by_owner_within_ties(&mut listed, |(hf, _)| *hf, |(_, o)| *o);
    let accounts = listed
        .into_iter()
        .take(limit)
        .filter_map(|(hf, owner)| {
            let view = engine.peek(&owner)?;
            let nearest = super::risk::nearest_liquidation(&view).map(|(pool, lp, expo)| {
                NearestLiquidation {
                    pool: pool.address_text.to_string(),
                    price: lp.price.to_string(),
                    expo,
                    direction: lp.direction,
                    distance_bps: lp.distance_bps,
                }
            });
            Some(AtRiskAccount {
                owner: owner.to_string(),
                account_health_factor_wad: hf.to_string(),
                account_health_factor_conf_wad: view.health_factor_with_confidence().to_string(),
                nearest_liquidation: nearest,
            })
        })
        .collect();
    AtRiskResponse { accounts }
}

/// Within runs of equal `key`, orders by owner as a base58 string (the wire
/// order of docs/design.md §8); runs of one, the common case, cost nothing.
fn by_owner_within_ties<T, K: PartialEq>(
    items: &mut [T],
    key: impl Fn(&T) -> K,
    owner: impl Fn(&T) -> Pubkey,
) {
    let mut start = 0;
    while start < items.len() {
        let mut end = start + 1;
        while end < items.len() && key(&items[end]) == key(&items[start]) {
            end += 1;
        }
        if end - start > 1 {
            items[start..end].sort_by_cached_key(|t| owner(t).to_string());
        }
        start = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_are_ordered_by_base58_owner() {
        // Byte order and base58 order differ for these two keys.
        let a = Pubkey::new_from_array([0; 32]); // "111...1"
        let b = Pubkey::new_from_array([255; 32]);
        let c = Pubkey::new_from_array([1; 32]);
        assert!(a.to_string() < c.to_string() && c.to_string() < b.to_string());
        let mut items = vec![(5u8, b), (5, c), (5, a), (7, b), (9, c)];
        by_owner_within_ties(&mut items, |(k, _)| *k, |(_, o)| *o);
        assert_eq!(items, vec![(5, a), (5, c), (5, b), (7, b), (9, c)]);
    }
}
