//! Slots and forks (docs/design.md §15): what a `processed` reader of the
//! chain may believe, and when.
//!
//! A gRPC source at `processed` hands over account writes of slots nobody has
//! voted on yet, and slot statuses (with the parent each slot was built on)
//! in any order. [`SlotTree`] takes both and says, after every step, which
//! slots are confirmed (their writes released to the one ingest path, in
//! (slot, write version) order, never before), which are abandoned (their
//! writes dropped, now and whenever they arrive), and which form the best
//! chain, whose writes the processed view lays over the confirmed one.
//!
//! The rules, in the words of the design:
//! - **confirmed**: status confirmed or finalized, or an ancestor of a
//!   confirmed slot (nodes skip statuses: a missing one is implied);
//! - **abandoned**: status dead (whenever it arrives), a descendant of an
//!   abandoned slot, or a slot whose known links show it is neither an
//!   ancestor nor a descendant of some confirmed slot (a sibling of one, or a
//!   fork below one). Nothing is decided on a link not yet known;
//! - **best chain**: of the slots neither confirmed nor abandoned whose links
//!   are known down to the highest confirmed slot, the highest, and its
//!   ancestors above that slot.
//!
//! Pure: no clock (times come with the statuses), no I/O. Property-tested
//! against a brute-force model of the same rules (`model_tests.rs`).

mod tree;

pub use tree::{Problem, SlotTree, Step};

use crate::pubkey::Pubkey;

/// A slot status as Yellowstone names them (`SlotStatus` in its proto).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SlotStatus {
    Processed,
    Confirmed,
    Finalized,
    FirstShredReceived,
    Completed,
    CreatedBank,
    Dead,
}

impl SlotStatus {
    pub const ALL: [SlotStatus; 7] = [
        SlotStatus::Processed,
        SlotStatus::Confirmed,
        SlotStatus::Finalized,
        SlotStatus::FirstShredReceived,
        SlotStatus::Completed,
        SlotStatus::CreatedBank,
        SlotStatus::Dead,
    ];

    /// The name in /metrics labels and logs.
    pub fn name(self) -> &'static str {
        match self {
            SlotStatus::Processed => "processed",
            SlotStatus::Confirmed => "confirmed",
            SlotStatus::Finalized => "finalized",
            SlotStatus::FirstShredReceived => "first_shred_received",
            SlotStatus::Completed => "completed",
            SlotStatus::CreatedBank => "created_bank",
            SlotStatus::Dead => "dead",
        }
    }

    /// A supermajority voted on the slot (finalized implies confirmed).
    pub fn confirms(self) -> bool {
        matches!(self, SlotStatus::Confirmed | SlotStatus::Finalized)
    }
}

/// What the tree needs to know of an account write; the payload is the
/// caller's.
pub trait SlotWrite {
    fn slot(&self) -> u64;
    /// Orders the writes of one slot (a later write has a higher one).
    fn write_version(&self) -> u64;
    fn account(&self) -> Pubkey;
}

/// Which view a reader asks for, and what the gRPC source reads at (Solana
/// RPC's words).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Commitment {
    /// Voted on by a supermajority: durable. What every route answers by default.
    #[default]
    Confirmed,
    /// The best chain now: tentative, a second or two ahead.
    Processed,
}

impl Commitment {
    pub fn name(self) -> &'static str {
        match self {
            Commitment::Confirmed => "confirmed",
            Commitment::Processed => "processed",
        }
    }

    /// Parses the `commitment` parameter or setting; `finalized` and anything
    /// else is not a view Lendex serves.
    pub fn parse(s: &str) -> Option<Commitment> {
        match s {
            "confirmed" => Some(Commitment::Confirmed),
            "processed" => Some(Commitment::Processed),
            _ => None,
        }
    }
}

#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod tests;
