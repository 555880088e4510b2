//! What readers see of the engine: an owner's positions with their pools and
//! quote (`OwnerView`).

use super::Engine;
use super::state::{Held, PoolEntry, PoolState};
use lendex_domain::liquidation::{Quote, QuoteInput, best_quote, health_factor_with_confidence};
use lendex_domain::pubkey::Pubkey;
use lendex_domain::view_key::Oracle;

/// A resident owner's positions with their pools, as readers see them.
pub struct OwnerView<'a> {
    pub owner: Pubkey,
    pub health_factor: u128,
    pub positions: Vec<(&'a Held, &'a PoolEntry)>,
    /// The best liquidation quote, while under water.
    pub quote: Option<&'a Quote>,
}

impl OwnerView<'_> {
    /// Provenance (§11): the largest context slot among the rows and pools
    /// every answer about this owner is computed from.
    pub fn slot(&self) -> u64 {
        self.positions
            .iter()
            .map(|(p, pool)| p.slot.max(pool.state.slot))
            .max()
            .unwrap_or(0)
    }

    /// The owner's pools valued at a feed that differs from the pool's own
    /// price (docs/design.md §17): their addresses, sorted, once each.
    pub fn crank(&self) -> Vec<String> {
        let mut pools: Vec<String> = (self.positions.iter())
            .filter(|(_, pool)| pool.state.crank)
            .map(|(_, pool)| pool.address_text.to_string())
            .collect();
        pools.sort_unstable();
        pools.dedup();
        pools
    }

    /// The account health factor priced with the oracles' confidence (§8).
    pub fn health_factor_with_confidence(&self) -> u128 {
        health_factor_with_confidence(&quote_inputs(
            self.positions.iter().map(|(p, pool)| (*p, &pool.state)),
        ))
    }

    /// The best pair with the given pools only (the /liquidations filters).
    pub fn quote_with(&self, debt: Option<&Pubkey>, collateral: Option<&Pubkey>) -> Option<Quote> {
        let inputs = quote_inputs(self.positions.iter().map(|(p, pool)| (*p, &pool.state)));
        best_quote(&inputs, debt, collateral)
    }
}

/// What an owner's entries, quote and events say of cranking: the list in
/// the feed view, nothing in the pool view.
pub fn crank_list(engine: &Engine, view: &OwnerView<'_>) -> Option<Vec<String>> {
    (engine.oracle() == Oracle::Feed).then(|| view.crank())
}

/// The quote inputs of positions with their pools.
pub fn quote_inputs<'a>(
    positions: impl Iterator<Item = (&'a Held, &'a PoolState)>,
) -> Vec<QuoteInput<'a>> {
    positions
        .map(|(p, pool)| QuoteInput {
            pool: &pool.address,
            position: &p.address,
            pricing: &pool.pricing,
            terms: &pool.terms,
            amounts: &p.amounts,
        })
        .collect()
}
