//! What the engine reports of a change: the liquidation feed's events.

use lendex_domain::pubkey::Pubkey;

/// A change of the liquidation feed, with the owner's health factor at that moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedEvent {
    /// Fell below 1 WAD (or was below when a subscriber joined).
    Start(Pubkey, u128),
    /// Still below, with another value or other rows.
    Update(Pubkey, u128),
    /// Back at or above 1 WAD.
    Stop(Pubkey, u128),
    /// No position left (a candidate_stop too): the owner is no longer held,
    /// so the event keeps the slot of the last state the engine had of it.
    Gone(Pubkey, u64),
}

impl FeedEvent {
    pub fn name(&self) -> &'static str {
        match self {
            FeedEvent::Start(..) => "candidate_start",
            FeedEvent::Update(..) => "candidate_update",
            FeedEvent::Stop(..) | FeedEvent::Gone(..) => "candidate_stop",
        }
    }

    pub fn owner(&self) -> Pubkey {
        match self {
            FeedEvent::Start(o, _)
            | FeedEvent::Update(o, _)
            | FeedEvent::Stop(o, _)
            | FeedEvent::Gone(o, _) => *o,
        }
    }

    pub fn health_factor(&self) -> u128 {
        match self {
            FeedEvent::Start(_, h) | FeedEvent::Update(_, h) | FeedEvent::Stop(_, h) => *h,
            FeedEvent::Gone(..) => u128::MAX,
        }
    }
}
