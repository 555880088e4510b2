//! The pools the engine holds, by dense id: each pool's state, what is
//! derived from it, and which resident owners hold a position in it. The
//! table owns the ids (a key is given one when first seen, never reused) and
//! the members; what a new state means for those members is the engine's.

use super::state::{PoolEntry, PoolState};
use super::{FastMap, FastSet, PoolId, Slot};
use lendex_domain::history::Cause;
use lendex_domain::pubkey::Pubkey;
use lendex_domain::rates::pool_apys;

/// A pool whose new state moves its members (`PoolTable::set`).
pub(crate) struct Moved {
    pub(crate) id: PoolId,
    pub(crate) cause: Cause,
    /// Its pricing moved (else only its liquidation terms: a re-quote).
    pub(crate) repriced: bool,
    /// Its crank flag moved: every member under water gets an update.
    pub(crate) recrank: bool,
}

/// What a pool's new state was to the table.
pub(crate) enum Set {
    /// Read at an older slot than the one held, or differing in its slot
    /// alone: nothing to re-render.
    Unchanged,
    /// Seen for the first time: nobody can hold a position in it yet.
    New(PoolId),
    /// Its pricing or its terms moved.
    Moved(Moved),
}

#[derive(Default)]
pub(crate) struct PoolTable {
    entries: FastMap<PoolId, PoolEntry>,
    ids: FastMap<Pubkey, PoolId>,
    next_id: PoolId,
}

impl PoolTable {
    pub(crate) fn id_of(&self, address: &Pubkey) -> Option<PoolId> {
        self.ids.get(address).copied()
    }

    pub(crate) fn get(&self, id: PoolId) -> Option<&PoolEntry> {
        self.entries.get(&id)
    }

    pub(crate) fn by_address(&self, address: &Pubkey) -> Option<&PoolEntry> {
        self.entries.get(self.ids.get(address)?)
    }

    /// The pool's key, while it is held.
    pub(crate) fn address(&self, id: PoolId) -> Option<Pubkey> {
        Some(self.entries.get(&id)?.state.address)
    }

    pub(crate) fn entries(&self) -> impl Iterator<Item = (PoolId, &PoolEntry)> {
        self.entries.iter().map(|(id, entry)| (*id, entry))
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// One past the highest id given: a vector indexed by id holds them all.
    pub(crate) fn id_bound(&self) -> usize {
        self.next_id as usize
    }

    /// Sets a pool's state (docs/design.md §7: a state read at an older slot
    /// than the one held changes nothing).
    pub(crate) fn set(&mut self, state: PoolState) -> Set {
        if let Some(&id) = self.ids.get(&state.address) {
            let held = &mut self.entry_mut(id).state;
            if held.slot > state.slot {
                return Set::Unchanged;
            }
            if (PoolState {
                slot: held.slot,
                ..state.clone()
            }) == *held
            {
                held.slot = state.slot;
                return Set::Unchanged;
            }
        }
        let (supply_apy, borrow_apy) =
            pool_apys(&state.rates, state.total_borrows, state.total_deposits);
        let Some(&id) = self.ids.get(&state.address) else {
            let id = self.next_id;
            self.next_id += 1;
            self.ids.insert(state.address, id);
            self.entries.insert(
                id,
                PoolEntry {
                    address_text: state.address.to_string().into(),
                    state,
                    supply_apy,
                    borrow_apy,
                    members: FastSet::default(),
                    has_evicted_members: false,
                },
            );
            return Set::New(id);
        };
        let entry = self.entry_mut(id);
        let repriced = entry.state.pricing != state.pricing;
        let new_terms = entry.state.terms != state.terms;
        let recrank = entry.state.crank != state.crank;
        let (old, new) = (&entry.state.pricing, &state.pricing);
        let cause = if (old.oracle_price, old.oracle_expo) != (new.oracle_price, new.oracle_expo) {
            Cause::Price
        } else {
            Cause::Terms
        };
        entry.state = state;
        entry.supply_apy = supply_apy;
        entry.borrow_apy = borrow_apy;
        if repriced || new_terms || recrank {
            Set::Moved(Moved {
                id,
                cause,
                repriced,
                recrank,
            })
        } else {
            Set::Unchanged
        }
    }

    /// A pool gone: its entry, with the members that must lose their positions.
    pub(crate) fn remove(&mut self, address: &Pubkey) -> Option<PoolEntry> {
        let id = self.ids.remove(address)?;
        self.entries.remove(&id)
    }

    /// A retraction puts back an older state whatever slot is held
    /// (docs/design.md §15).
    pub(crate) fn forget_slot(&mut self, address: &Pubkey) {
        if let Some(&id) = self.ids.get(address) {
            self.entry_mut(id).state.slot = 0;
        }
    }

    /// The pool's resident members, in slot order (the order they were
    /// loaded in, so a walk over them goes forwards through memory).
    pub(crate) fn members(&self, id: PoolId) -> Vec<Slot> {
        let mut members: Vec<Slot> = self
            .entries
            .get(&id)
            .map(|e| e.members.iter().copied().collect())
            .unwrap_or_default();
        members.sort_unstable();
        members
    }

    /// Whether some member of the pool was evicted (its caller re-loads them).
    pub(crate) fn has_evicted_members(&self, id: PoolId) -> bool {
        self.entries.get(&id).is_some_and(|e| e.has_evicted_members)
    }

    pub(crate) fn join(&mut self, id: PoolId, member: Slot) {
        if let Some(entry) = self.entries.get_mut(&id) {
            entry.members.insert(member);
        }
    }

    pub(crate) fn leave(&mut self, id: PoolId, member: Slot) {
        if let Some(entry) = self.entries.get_mut(&id) {
            entry.members.remove(&member);
        }
    }

    /// A member of the pool was evicted.
    pub(crate) fn lost_member(&mut self, id: PoolId) {
        if let Some(entry) = self.entries.get_mut(&id) {
            entry.has_evicted_members = true;
        }
    }

    fn entry_mut(&mut self, id: PoolId) -> &mut PoolEntry {
        self.entries.get_mut(&id).expect("ids map to pools")
    }
}
