//! The resident owners: a slab of owners by slot, the index from key to slot,
//! and the LRU of owners above water. The slab owns residency (who is held,
//! where, and who is evicted past `max_owners`); an owner's value and what it
//! means to the feed are the engine's.

use std::sync::Arc;

use lru::LruCache;

use super::filing::{Standing, standing};
use super::state::Held;
use super::{FastMap, Hasher, Slot};
use lendex_domain::history::rule::Baseline;
use lendex_domain::liquidation::Quote;
use lendex_domain::pubkey::Pubkey;

/// One resident owner: its positions and what the engine derived from them.
pub(crate) struct Owner {
    pub(crate) key: Pubkey,
    /// Shared with the same owner's in a twin engine while they are equal
    /// (`twin.rs`): written only through `OwnerSlab::set_positions` and
    /// `positions_mut`, which copy a shared list before changing it.
    pub(crate) positions: Arc<[Held]>,
    pub(crate) hf: u128,
    /// The value last known to be stored in positions.health_factor_wad.
    pub(crate) stored_hf: Option<u128>,
    /// The best liquidation quote, while under water (None when no pair qualifies).
    pub(crate) quote: Option<Box<Quote>>,
    /// Its last recorded history point, while history is recorded.
    pub(crate) recorded: Option<Baseline>,
    /// Where its re-scored value waits among history's deferred notes.
    pub(crate) deferred: Option<u32>,
}

pub(crate) struct OwnerSlab {
    owners: Vec<Owner>,
    index: FastMap<Pubkey, Slot>,
    free: Vec<Slot>,
    /// Resident owners above water by recency (owners under water are not in it).
    /// Past `max_owners` the least recent healthy one is evicted; watched owners
    /// are passed over, so crossing 2 WAD costs no LRU work.
    lru: LruCache<Slot, (), Hasher>,
    max_owners: usize,
    evictions: u64,
    /// While this slab shares positions with a twin's: the slots whose
    /// positions were written since the last share (`twin.rs`).
    written: Option<Vec<Slot>>,
}

impl OwnerSlab {
    pub(crate) fn new(max_owners: usize) -> Self {
        OwnerSlab {
            owners: Vec::new(),
            index: FastMap::default(),
            free: Vec::new(),
            lru: LruCache::unbounded_with_hasher(Hasher::default()),
            max_owners: max_owners.max(1),
            evictions: 0,
            written: None,
        }
    }

    pub(crate) fn max_owners(&self) -> usize {
        self.max_owners
    }

    pub(crate) fn slot_of(&self, key: &Pubkey) -> Option<Slot> {
        self.index.get(key).copied()
    }

    pub(crate) fn by_key(&self, key: &Pubkey) -> Option<&Owner> {
        self.index.get(key).map(|slot| &self.owners[*slot as usize])
    }

    pub(crate) fn get(&self, slot: Slot) -> &Owner {
        &self.owners[slot as usize]
    }

    pub(crate) fn get_mut(&mut self, slot: Slot) -> &mut Owner {
        &mut self.owners[slot as usize]
    }

    /// Every slot of the slab, resident or free: a vector indexed by slot
    /// holds them all.
    pub(crate) fn slot_bound(&self) -> usize {
        self.owners.len()
    }

    /// An owner's new positions.
    pub(crate) fn set_positions(&mut self, slot: Slot, positions: Vec<Held>) {
        self.owners[slot as usize].positions = positions.into();
        self.note_written(slot);
    }

    /// An owner's positions to change in place: its own copy first when a
    /// twin shares them.
    pub(crate) fn positions_mut(&mut self, slot: Slot) -> &mut [Held] {
        self.note_written(slot);
        Arc::make_mut(&mut self.owners[slot as usize].positions)
    }

    fn note_written(&mut self, slot: Slot) {
        if let Some(written) = &mut self.written {
            written.push(slot);
        }
    }

    /// Starts noting the slots whose positions are written (a twin's sharer).
    pub(crate) fn note_writes(&mut self) {
        self.written.get_or_insert_with(Vec::new);
    }

    pub(crate) fn notes_writes(&self) -> bool {
        self.written.is_some()
    }

    /// The slots whose positions were written since the last take.
    pub(crate) fn take_written(&mut self) -> Vec<Slot> {
        self.written
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Whether `slot` holds a resident owner.
    pub(crate) fn is_resident(&self, slot: Slot) -> bool {
        let owner = &self.owners[slot as usize];
        self.index.get(&owner.key) == Some(&slot)
    }

    /// The resident owners' slots, in no order.
    pub(crate) fn slots(&self) -> impl Iterator<Item = Slot> + '_ {
        self.index.values().copied()
    }

    /// The resident owners, in no order.
    pub(crate) fn resident(&self) -> impl Iterator<Item = &Owner> {
        self.index.values().map(|slot| &self.owners[*slot as usize])
    }

    /// Every owner of the slab, resident or free.
    pub(crate) fn all_mut(&mut self) -> impl Iterator<Item = &mut Owner> {
        self.owners.iter_mut()
    }

    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    pub(crate) fn evictions(&self) -> u64 {
        self.evictions
    }

    /// A new resident, with no positions yet and the history baseline it had.
    pub(crate) fn alloc(&mut self, key: Pubkey, recorded: Option<Baseline>) -> Slot {
        let owner = Owner {
            key,
            positions: Arc::default(),
            hf: u128::MAX,
            stored_hf: None,
            quote: None,
            recorded,
            deferred: None,
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.owners[slot as usize] = owner;
                slot
            }
            None => {
                self.owners.push(owner);
                (self.owners.len() - 1) as Slot
            }
        };
        self.index.insert(key, slot);
        slot
    }

    /// Forgets a resident whose positions the engine has taken out.
    pub(crate) fn free(&mut self, slot: Slot) {
        let owner = &mut self.owners[slot as usize];
        owner.quote = None;
        self.lru.pop(&slot);
        self.index.remove(&owner.key);
        self.free.push(slot);
    }

    /// A read: a healthy owner moves up in the LRU.
    pub(crate) fn touch(&mut self, slot: Slot) {
        self.lru.get(&slot);
    }

    /// An owner under water is not in the LRU (never evicted).
    pub(crate) fn unhealthy(&mut self, slot: Slot) {
        self.lru.pop(&slot);
    }

    /// Puts an owner above water first in the LRU; the owners evicted to
    /// make room, to be released by the engine (`evict_past_cap`).
    pub(crate) fn keep(&mut self, slot: Slot) -> Vec<Slot> {
        self.lru.put(slot, ());
        self.evict_past_cap(Some(slot))
    }

    /// Evicts least recent healthy owners while more than `max_owners` are above
    /// water; `spare` (just filed) is passed over like the watched ones, which
    /// are moved to the front (each at most once per call, so this ends even
    /// if all are watched). The evicted are out of the LRU, still resident.
    pub(crate) fn evict_past_cap(&mut self, spare: Option<Slot>) -> Vec<Slot> {
        let mut evicted = Vec::new();
        let mut passes = self.lru.len();
        while self.lru.len() > self.max_owners && passes > 0 {
            passes -= 1;
            let Some((&oldest, _)) = self.lru.peek_lru() else {
                break;
            };
            if Some(oldest) == spare
                || standing(self.owners[oldest as usize].hf) != Standing::Healthy
            {
                self.lru.promote(&oldest);
                continue;
            }
            self.lru.pop(&oldest);
            self.evictions += 1;
            evicted.push(oldest);
        }
        evicted
    }
}
