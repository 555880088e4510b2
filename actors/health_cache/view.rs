//! What readers see of the engine: an owner's positions with their pools and
//! quote (`OwnerView`), and the feed events the engine reports (`FeedEvent`).

use super::engine::{Held, PoolEntry, PoolState};
use crate::domain::liquidation::{Quote, QuoteInput, best_quote, health_factor_with_confidence};
use crate::domain::pubkey::Pubkey;

/// A change of the liquidation feed, with the owner's health factor at that moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedEvent {
    /// Fell below 1 WAD (or was below when a subscriber joined).
    Start(Pubkey, u128),
    /// Still below, with another value or other rows.
    Update(Pubkey, u128),
    /// Back at or above 1 WAD, or no position left.
    Stop(Pubkey, u128),
}

impl FeedEvent {
    pub fn name(&self) -> &'static str {
        match self {
            FeedEvent::Start(..) => "candidate_start",
            FeedEvent::Update(..) => "candidate_update",
            FeedEvent::Stop(..) => "candidate_stop",
        }
    }

    pub fn owner(&self) -> Pubkey {
        match self {
            FeedEvent::Start(o, _) | FeedEvent::Update(o, _) | FeedEvent::Stop(o, _) => *o,
        }
    }

    pub fn health_factor(&self) -> u128 {
        match self {
            FeedEvent::Start(_, h) | FeedEvent::Update(_, h) | FeedEvent::Stop(_, h) => *h,
        }
    }
}

/// A resident owner's positions with their pools, as readers see them.
pub struct OwnerView<'a> {
    pub owner: Pubkey,
    pub health_factor: u128,
    pub positions: Vec<(&'a Held, &'a PoolEntry)>,
    /// The best liquidation quote, while under water.
    pub quote: Option<&'a Quote>,
}

impl OwnerView<'_> {
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
pub(super) fn quote_inputs<'a>(
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
