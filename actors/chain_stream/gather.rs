//! How long a batch of streamed updates gathers (docs/design.md §14): the
//! writes of one slot apply as one change. A gRPC batch ends at its slot's
//! status; a websocket batch, whose notification slots prove nothing, ends
//! when the node announces a later slot than the one the batch began in.

use std::time::Duration;

use crate::chain::source::{AccountUpdate, SlotUpdate};

/// Updates gathered into one batch: what arrives within 20 ms, at most 100
/// accounts. A gRPC batch ends at once at the status of its last slot (a
/// server sends it after the slot's writes), waits for it up to 100 ms, and
/// is not cut at 100 accounts inside a slot (up to 10,000). The writes of each slot
/// in a batch are committed together (`commit_slots`).
pub(super) const GATHER_FOR: Duration = Duration::from_millis(20);
/// How long a gRPC batch waits, at most, for the status closing its slot.
pub(super) const GATHER_SLOT_FOR: Duration = Duration::from_millis(100);
pub(super) const GATHER_MAX: usize = 100;
const GATHER_SLOT_MAX: usize = 10_000;
/// A websocket batch holds until the slot it began in is over (the node's
/// slot notification of a later slot), so that writes of one slot apply as
/// one change: two prices written in one slot never flip an account under
/// and back. At most this long (two slots) when no later slot is announced.
pub(super) const HOLD_SLOT_FOR: Duration = Duration::from_millis(800);
/// A later slot announced this soon after a websocket batch's first write was
/// on its way already: the node's slot notification and its account
/// notification race, so the write may well belong to that slot. The batch
/// then holds until the slot after it (one change may span two slots' end
/// states, never a mix that existed at no slot's end).
const SLOT_NEWS_LAG: Duration = Duration::from_millis(50);

/// Past `GATHER_MAX`, a batch still takes accounts while they may be of its
/// slot, up to `GATHER_SLOT_MAX`: a gRPC batch while its last two share a
/// slot (the next one may too); a websocket batch until its slot is over.
pub(super) fn slot_still_open(batch: &[AccountUpdate], by_slot: bool) -> bool {
    batch.len() < GATHER_SLOT_MAX && (!by_slot || matches!(batch, [.., a, b] if a.slot == b.slot))
}

/// The slot a batch is gathering for.
pub(super) enum Gathering {
    /// gRPC: each write names its slot, and a status ends it.
    BySlot,
    /// Websocket, the node's slot when the batch began (None: the node has
    /// announced no slot yet, so the batch gathers for `GATHER_FOR`).
    Announced(Option<u64>),
}

impl Gathering {
    /// Whether `slot`'s notification, `since_first` after the batch's first
    /// update, ends the batch.
    pub(super) fn ends_at(
        &mut self,
        slot: &SlotUpdate,
        batch: &[AccountUpdate],
        since_first: Duration,
    ) -> bool {
        match self {
            Gathering::BySlot => {
                slot.status.confirms() && batch.iter().all(|a| a.slot <= slot.slot)
            }
            Gathering::Announced(Some(began)) if slot.slot > *began => {
                if since_first < SLOT_NEWS_LAG {
                    *began = slot.slot; // the batch's writes may be of this slot
                    false
                } else {
                    true
                }
            }
            Gathering::Announced(_) => false,
        }
    }

    /// How long the batch may gather at most, and whether it is held for a
    /// whole slot (past `GATHER_MAX`).
    pub(super) fn bounds(&self) -> (Duration, bool) {
        match self {
            Gathering::BySlot => (GATHER_FOR, true),
            Gathering::Announced(Some(_)) => (HOLD_SLOT_FOR, true),
            Gathering::Announced(None) => (GATHER_FOR, false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::forks::SlotStatus;
    use crate::domain::pubkey::Pubkey;

    fn slot(slot: u64) -> SlotUpdate {
        SlotUpdate {
            slot,
            parent: slot.checked_sub(1),
            status: SlotStatus::Processed,
        }
    }

    fn write(slot: u64) -> AccountUpdate {
        AccountUpdate {
            slot,
            pubkey: Pubkey::new_from_array([1; 32]),
            owner: Pubkey::new_from_array([2; 32]),
            lamports: Some(1),
            data: Vec::new(),
            write_version: None,
        }
    }

    #[test]
    fn a_later_slot_ends_a_websocket_batch() {
        let mut g = Gathering::Announced(Some(10));
        let batch = [write(0)];
        let later = Duration::from_millis(200);
        assert!(!g.ends_at(&slot(10), &batch, later), "its own slot again");
        assert!(g.ends_at(&slot(11), &batch, later));
    }

    #[test]
    fn a_slot_announced_at_once_was_already_on_its_way() {
        // The node announced slot 11 before the batch's first write, but the
        // notification came after it: the write is of slot 11, whose end is
        // the announcement of 12.
        let mut g = Gathering::Announced(Some(10));
        let batch = [write(0)];
        assert!(!g.ends_at(&slot(11), &batch, Duration::from_millis(3)));
        assert!(!g.ends_at(&slot(11), &batch, Duration::from_millis(60)));
        assert!(g.ends_at(&slot(12), &batch, Duration::from_millis(400)));
    }

    #[test]
    fn with_no_slot_announced_a_websocket_batch_gathers_briefly() {
        let mut g = Gathering::Announced(None);
        assert!(!g.ends_at(&slot(5), &[write(0)], Duration::from_millis(200)));
        assert_eq!(g.bounds(), (GATHER_FOR, false));
    }

    #[test]
    fn a_grpc_batch_ends_at_a_status_covering_its_writes() {
        let mut g = Gathering::BySlot;
        let confirmed = |s| SlotUpdate {
            status: SlotStatus::Confirmed,
            ..slot(s)
        };
        let batch = [write(7), write(8)];
        assert!(
            !g.ends_at(&slot(8), &batch, Duration::ZERO),
            "processed is no end"
        );
        assert!(
            !g.ends_at(&confirmed(7), &batch, Duration::ZERO),
            "slot 8 is open"
        );
        assert!(g.ends_at(&confirmed(8), &batch, Duration::ZERO));
    }
}
