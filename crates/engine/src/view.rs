//! What readers see of the engine: an owner's positions with their pools and
//! quote (`OwnerView`).

use super::state::{Held, PoolEntry, PoolState};
use lendex_domain::liquidation::{Quote, QuoteInput, best_quote, health_factor_with_confidence};
use lendex_domain::pubkey::Pubkey;

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
