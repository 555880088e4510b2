//! The health engine: a pure, synchronous core with no I/O and no actix.
//!
//! It holds the pools' pricing, every resident owner's positions and account
//! health factor, the ranking of unhealthy owners and the LRU of healthy ones.
//! Callers feed it changes (a pool's new state, an owner's new positions) and it
//! answers with what changed: feed events (candidate start / update / stop) and
//! the health factors that still have to be written to `positions`.
//!
//! It is the one owner of the account health factor: nothing else computes the
//! value that is stored, ranked, streamed and served.
//!
//! Memory is bounded: healthy owners live in an LRU of `max_owners`. Owners under
//! water and those in the watch band below `WATCH_BELOW` are never evicted (the
//! feed and the at-risk list must be complete). A pool that lost members to
//! eviction says so, and its caller re-loads those owners from the database.

mod changes;
pub mod events;
mod filing;
pub mod history;
pub mod parallel;
pub mod pool_status;
pub mod processed;
pub mod quotes;
mod rescore;
pub mod risk;
#[cfg(any(test, feature = "sample"))]
pub mod sample;
pub mod state;
pub mod unhealthy;
pub mod view;

use std::collections::{BTreeSet, HashMap, HashSet};

use lru::LruCache;

pub use changes::{Change, Unapplied};
pub use events::FeedEvent;
use filing::{Standing, standing};
pub use state::{Held, PoolEntry, PoolState, PositionState};
use view::{OwnerView, quote_inputs};

use lendex_domain::forks::Commitment;
use lendex_domain::history::Cause;
use lendex_domain::history::rule::Baseline;
use lendex_domain::liquidation::{Quote, best_quote};
use lendex_domain::pubkey::Pubkey;
use lendex_domain::rates::pool_apys;
use lendex_domain::wad::{PositionAmounts, WAD, account_health_factor};

/// Owners at or above 1 WAD and below this are watched (the at-risk list): never
/// evicted, like the owners under water.
pub const WATCH_BELOW: u128 = 2 * WAD;

type Hasher = foldhash::fast::RandomState;
pub type FastMap<K, V> = HashMap<K, V, Hasher>;
type FastSet<K> = HashSet<K, Hasher>;

/// A pool's dense id inside the engine: members are tracked per id, not per key.
type PoolId = u32;

/// A pool whose new state moves its members (`Engine::set_pool`).
pub(crate) struct Moved {
    id: PoolId,
    cause: Cause,
    /// Its pricing moved (else only its liquidation terms: a re-quote).
    repriced: bool,
}
/// An owner's place in the slab.
type Slot = u32;

struct Owner {
    key: Pubkey,
    positions: Vec<Held>,
    hf: u128,
    /// The value last known to be stored in positions.health_factor_wad.
    stored_hf: Option<u128>,
    /// The best liquidation quote, while under water (None when no pair qualifies).
    quote: Option<Box<Quote>>,
    /// Its last recorded history point, while history is recorded.
    recorded: Option<Baseline>,
    /// Where its re-scored value waits among history's deferred notes.
    deferred: Option<u32>,
}

pub struct Engine {
    pools: FastMap<PoolId, PoolEntry>,
    pool_ids: FastMap<Pubkey, PoolId>,
    next_pool_id: PoolId,
    owners: Vec<Owner>,
    index: FastMap<Pubkey, Slot>,
    free: Vec<Slot>,
    /// Resident owners above water by recency (owners under water are not in it).
    /// Past `max_owners` the least recent healthy one is evicted; watched owners
    /// are passed over, so crossing 2 WAD costs no LRU work.
    lru: LruCache<Slot, (), Hasher>,
    max_owners: usize,
    /// Unhealthy owners, most underwater first.
    ranking: BTreeSet<(u128, Pubkey)>,
    /// How many owners are watched (1 WAD <= hf < WATCH_BELOW). They are not kept
    /// sorted: a price move shifts thousands of them, and the at-risk list is read
    /// far less often than prices move, so it is sorted when rendered.
    watched: usize,
    evictions: u64,
    /// Health factors not yet known to be stored.
    dirty: FastMap<Pubkey, u128>,
    /// Feed events since the last `take_events`, while they are kept.
    events: Vec<FeedEvent>,
    record_events: bool,
    /// During a full reload: who was under water before it (with its slot).
    was_unhealthy: Option<FastMap<Pubkey, u64>>,
    /// Bumped by any change that can alter an unhealthy answer.
    version: u64,
    /// History's recorder, while this engine records (the leader).
    history: Option<Box<history::Recorder>>,
    /// The view this engine holds (docs/design.md §15), named in its quotes
    /// and events.
    commitment: Commitment,
}

impl Engine {
    pub fn new(max_owners: usize) -> Self {
        Engine {
            pools: FastMap::default(),
            pool_ids: FastMap::default(),
            next_pool_id: 0,
            owners: Vec::new(),
            index: FastMap::default(),
            free: Vec::new(),
            lru: LruCache::unbounded_with_hasher(Hasher::default()),
            max_owners: max_owners.max(1),
            ranking: BTreeSet::new(),
            watched: 0,
            evictions: 0,
            dirty: FastMap::default(),
            events: Vec::new(),
            record_events: false,
            was_unhealthy: None,
            version: 0,
            history: None,
            commitment: Commitment::Confirmed,
        }
    }

    /// The view this engine holds (its quotes and events say so).
    pub fn commitment(&self) -> Commitment {
        self.commitment
    }

    /// Forgets everything (before a full reload); `end_reload` then tells the
    /// feed what the reload changed.
    pub fn clear(&mut self) {
        self.settle_notes();
        let (record, version) = (self.record_events, self.version);
        let events = std::mem::take(&mut self.events);
        let was_unhealthy: FastMap<Pubkey, u64> = if record {
            self.ranking
                .iter()
                .map(|(_, key)| (*key, self.peek(key).map_or(0, |v| v.slot())))
                .collect()
        } else {
            FastMap::default()
        };
        // History's baselines outlive the reload: owners come back to them.
        let resident: Vec<Slot> = self.index.values().copied().collect();
        for id in resident {
            if let Some(b) = self.owners[id as usize].recorded.take() {
                let key = self.owners[id as usize].key;
                self.park_baseline(key, b);
            }
        }
        let (history, commitment) = (self.history.take(), self.commitment);
        *self = Engine::new(self.max_owners);
        self.history = history;
        self.commitment = commitment;
        self.history_loading(true);
        self.record_events = record;
        self.events = events;
        self.was_unhealthy = Some(was_unhealthy);
        // Monotonic across reloads: answers rendered before must not match again.
        self.version = version + 1;
    }

    /// After a full reload: the feed continues as if the changes had come one
    /// by one. An owner under water before and after is updated (not started
    /// twice); one under water before and not now is stopped.
    pub fn end_reload(&mut self) {
        self.history_loading(false);
        let Some(was) = self.was_unhealthy.take() else {
            return;
        };
        for event in &mut self.events {
            if let FeedEvent::Start(owner, hf) = *event
                && was.contains_key(&owner)
            {
                *event = FeedEvent::Update(owner, hf);
            }
        }
        let mut recovered: Vec<(Pubkey, u64)> = was
            .into_iter()
            .filter(|(owner, _)| {
                self.index
                    .get(owner)
                    .is_none_or(|id| self.owners[*id as usize].hf >= WAD)
            })
            .collect();
        recovered.sort_unstable();
        for (owner, slot) in recovered {
            match self.index.get(&owner) {
                Some(id) => {
                    let hf = self.owners[*id as usize].hf;
                    self.emit(FeedEvent::Stop(owner, hf));
                }
                None => self.emit(FeedEvent::Gone(owner, slot)),
            }
        }
    }

    // ---- pools ----------------------------------------------------------------

    /// Sets a pool's state and re-scores its resident members. Returns true when
    /// the pool has members that were evicted: the caller must re-load them.
    /// A state read at an older slot than the one held changes nothing; one
    /// that differs only in its slot moves the slot alone (nothing to re-render).
    pub fn upsert_pool(&mut self, state: PoolState) -> bool {
        match self.set_pool(state) {
            Some(moved) => self.rescore_moved(moved),
            None => false,
        }
    }

    /// A pool's new state, without re-scoring anyone yet: what moved, when
    /// its members must be re-scored or re-quoted (`rescore_moved`). Several
    /// pools of one change are all set first, so each member is scored once
    /// with every new price, never through a mix that existed at no slot's end.
    pub(crate) fn set_pool(&mut self, state: PoolState) -> Option<Moved> {
        if let Some(&id) = self.pool_ids.get(&state.address) {
            let held = &mut self.pools.get_mut(&id).expect("ids map to pools").state;
            if held.slot > state.slot {
                return None;
            }
            if (PoolState {
                slot: held.slot,
                ..state.clone()
            }) == *held
            {
                held.slot = state.slot;
                return None;
            }
        }
        let (supply_apy, borrow_apy) =
            pool_apys(&state.rates, state.total_borrows, state.total_deposits);
        self.version += 1;
        self.note_oracle(&state);
        let id = match self.pool_ids.get(&state.address) {
            Some(id) => *id,
            None => {
                let id = self.next_pool_id;
                self.next_pool_id += 1;
                self.pool_ids.insert(state.address, id);
                self.pools.insert(
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
                return None; // nobody can hold a position in a pool not known before
            }
        };
        let entry = self.pools.get_mut(&id).expect("ids map to pools");
        let repriced = entry.state.pricing != state.pricing;
        let new_terms = entry.state.terms != state.terms;
        let (old, new) = (&entry.state.pricing, &state.pricing);
        let cause = if (old.oracle_price, old.oracle_expo) != (new.oracle_price, new.oracle_expo) {
            Cause::Price
        } else {
            Cause::Terms
        };
        entry.state = state;
        entry.supply_apy = supply_apy;
        entry.borrow_apy = borrow_apy;
        (repriced || new_terms).then_some(Moved {
            id,
            cause,
            repriced,
        })
    }

    /// Re-scores (or, for new terms alone, re-quotes) the members of a pool
    /// `set_pool` moved; true when it has evicted members to re-load.
    pub(crate) fn rescore_moved(&mut self, moved: Moved) -> bool {
        if !self.pools.contains_key(&moved.id) {
            return false; // removed since
        }
        if !moved.repriced {
            self.requote_pool(moved.id);
            return false;
        }
        self.rescore_pool(moved.id, moved.cause);
        // Read after the re-score: a member that turned healthy may have evicted
        // another that has not been re-scored yet.
        self.pools[&moved.id].has_evicted_members
    }

    /// A pool gone from the index: its positions are gone with it (cascade).
    pub fn remove_pool(&mut self, address: &Pubkey) {
        let Some(id) = self.pool_ids.remove(address) else {
            return;
        };
        self.version += 1;
        let members: Vec<Slot> = self.pools[&id].members.iter().copied().collect();
        self.pools.remove(&id);
        for slot in members {
            let owner = &self.owners[slot as usize];
            let key = owner.key;
            let kept: Vec<PositionState> = owner
                .positions
                .iter()
                .filter_map(|p| Some(p.state(self.pools.get(&p.pool)?.state.address)))
                .collect();
            self.set_owner(key, kept);
        }
    }

    /// Every pool held, in no order.
    pub fn pools(&self) -> impl Iterator<Item = &PoolEntry> {
        self.pools.values()
    }

    pub fn pool(&self, address: &Pubkey) -> Option<&PoolEntry> {
        self.pools.get(self.pool_ids.get(address)?)
    }

    pub fn pool_count(&self) -> usize {
        self.pools.len()
    }

    // ---- owners ---------------------------------------------------------------

    /// Replaces an owner's positions (none removes the owner) and re-scores it.
    /// Positions in pools the engine does not know are left out.
    pub fn set_owner(&mut self, key: Pubkey, positions: Vec<PositionState>) {
        self.replace_owner(key, positions, 0);
    }

    /// `set_owner`, where what removed positions was read at `removed_at`.
    pub(crate) fn replace_owner(
        &mut self,
        key: Pubkey,
        positions: Vec<PositionState>,
        removed_at: u64,
    ) {
        let held: Vec<Held> = positions
            .into_iter()
            .filter_map(|state| {
                let pool = *self.pool_ids.get(&state.pool)?;
                Some(Held::new(state, pool))
            })
            .collect();
        let existing = self.index.get(&key).copied();
        if let Some(id) = existing {
            // History notes a re-scored value before the change that follows it.
            self.settle_note(id);
        }
        if held.is_empty() {
            if let Some(id) = existing {
                let hf = self.owners[id as usize].hf;
                let last = self.owners[id as usize].recorded;
                let slot = self.view_of(id).slot().max(removed_at);
                self.release(id);
                let (cause, _) = self.owner_change(true);
                self.note_gone(key, last, slot, cause);
                if hf < WAD {
                    self.version += 1;
                    self.emit(FeedEvent::Gone(key, slot));
                }
            }
            return;
        }
        let (id, old) = match existing {
            Some(id) => {
                let owner = &mut self.owners[id as usize];
                let old = (owner.hf, snapshot(&owner.positions));
                for p in std::mem::take(&mut owner.positions) {
                    if let Some(pool) = self.pools.get_mut(&p.pool) {
                        pool.members.remove(&id);
                    }
                }
                (id, Some(old))
            }
            None => (self.alloc(key), None),
        };
        for p in &held {
            if let Some(pool) = self.pools.get_mut(&p.pool) {
                pool.members.insert(id);
            }
        }
        let hf = score(&self.pools, &held);
        let quote = quote_of(&self.pools, &held, hf);
        let rows_changed = old
            .as_ref()
            .is_none_or(|(_, rows)| *rows != snapshot(&held));
        self.owners[id as usize].positions = held;
        self.refile(id, hf, old.as_ref().map(|(h, _)| *h), rows_changed, quote);
        let (cause, changed) = self.owner_change(rows_changed);
        self.note_owner(id, cause, changed, None);
        if rows_changed && let Some((before_hf, before)) = &old {
            self.note_liquidation(id, *before_hf, before);
        }
    }

    /// Records what the database holds for an owner just loaded, so an unchanged
    /// value is not written again.
    pub fn set_stored(&mut self, key: &Pubkey, stored: u128) {
        if let Some(id) = self.index.get(key) {
            let owner = &mut self.owners[*id as usize];
            owner.stored_hf = Some(stored);
            if owner.hf == stored {
                self.dirty.remove(key);
            }
        }
    }

    /// Whether the owner is resident.
    pub fn holds(&self, key: &Pubkey) -> bool {
        self.index.contains_key(key)
    }

    /// True when the engine can answer for this owner: resident, or never evicted
    /// anyone (so an absent owner has no positions).
    pub fn knows(&self, key: &Pubkey) -> bool {
        self.index.contains_key(key) || self.evictions == 0
    }

    pub fn health_factor(&self, key: &Pubkey) -> Option<u128> {
        self.index.get(key).map(|id| self.owners[*id as usize].hf)
    }

    /// An owner's positions with their pools, newest sync first; a read keeps a
    /// healthy owner resident (it moves up in the LRU).
    pub fn view(&mut self, key: &Pubkey) -> Option<OwnerView<'_>> {
        let id = *self.index.get(key)?;
        self.lru.get(&id);
        Some(self.view_of(id))
    }

    /// The same without touching the LRU (rendering the feed).
    pub fn peek(&self, key: &Pubkey) -> Option<OwnerView<'_>> {
        self.index.get(key).map(|id| self.view_of(*id))
    }

    /// Watched owners with a health factor below `below` (at most WATCH_BELOW),
    /// lowest first (ties by key; callers order ties as they need).
    pub fn watched_below(&self, below: u128) -> Vec<(u128, Pubkey)> {
        let mut out: Vec<(u128, Pubkey)> = self
            .index
            .values()
            .map(|id| &self.owners[*id as usize])
            .filter(|o| (WAD..below.min(WATCH_BELOW)).contains(&o.hf))
            .map(|o| (o.hf, o.key))
            .collect();
        out.sort_unstable();
        out
    }

    fn view_of(&self, id: Slot) -> OwnerView<'_> {
        let owner = &self.owners[id as usize];
        let mut positions: Vec<(&Held, &PoolEntry)> = owner
            .positions
            .iter()
            .filter_map(|p| Some((p, self.pools.get(&p.pool)?)))
            .collect();
        positions.sort_by(|a, b| {
            b.0.synced_us
                .cmp(&a.0.synced_us)
                .then(a.0.address.cmp(&b.0.address))
        });
        OwnerView {
            owner: owner.key,
            health_factor: owner.hf,
            positions,
            quote: owner.quote.as_deref(),
        }
    }

    /// Unhealthy owners, most underwater first (ties by owner).
    pub fn unhealthy(&self) -> impl Iterator<Item = (u128, Pubkey)> + '_ {
        self.ranking.iter().copied()
    }

    pub fn owner_count(&self) -> usize {
        self.index.len()
    }

    pub fn unhealthy_count(&self) -> usize {
        self.ranking.len()
    }

    pub fn watched_count(&self) -> usize {
        self.watched
    }

    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    // ---- what changed ------------------------------------------------------------

    /// Whether feed events are kept for `take_events` (the health cache
    /// always keeps them: every replica numbers every event).
    pub fn record_events(&mut self, on: bool) {
        self.record_events = on;
        if !on {
            self.events.clear();
        }
    }

    pub fn take_events(&mut self) -> Vec<FeedEvent> {
        std::mem::take(&mut self.events)
    }

    /// The health factors to write to `positions`, by owner.
    pub fn take_dirty(&mut self) -> FastMap<Pubkey, u128> {
        std::mem::take(&mut self.dirty)
    }

    pub fn has_dirty(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// How many owners' health factors are to be written.
    pub fn dirty_count(&self) -> usize {
        self.dirty.len()
    }

    /// Forgets what is believed stored: every resident owner's value is to be
    /// written (a replica that becomes the writer of the health factors,
    /// having only believed the previous writer until then).
    pub fn forget_stored(&mut self) {
        for id in self.index.values() {
            let owner = &mut self.owners[*id as usize];
            owner.stored_hf = None;
            self.dirty.insert(owner.key, owner.hf);
        }
    }

    /// The outcome of writing what `take_dirty` gave: stored, or to be written again.
    /// Keeps the invariant: `dirty` holds exactly the owners whose value differs
    /// from what is stored, also when values moved while the write was in flight
    /// (a value that moved back to the old stored one must be written again).
    pub fn written(&mut self, batch: FastMap<Pubkey, u128>, ok: bool) {
        for (key, hf) in batch {
            let Some(id) = self.index.get(&key) else {
                continue;
            };
            let owner = &mut self.owners[*id as usize];
            if ok {
                owner.stored_hf = Some(hf);
            }
            if owner.stored_hf == Some(owner.hf) {
                self.dirty.remove(&key);
            } else {
                self.dirty.insert(key, owner.hf);
            }
        }
    }
}

/// An owner's account health factor from its positions and the pools.
fn score(pools: &FastMap<PoolId, PoolEntry>, positions: &[Held]) -> u128 {
    account_health_factor(positions.iter().filter_map(|p| {
        pools
            .get(&p.pool)
            .map(|pool| (&pool.state.pricing, &p.amounts))
    }))
}

/// An owner's best liquidation quote while under water (none above water, or
/// when no pair qualifies).
fn quote_of(
    pools: &FastMap<PoolId, PoolEntry>,
    positions: &[Held],
    hf: u128,
) -> Option<Box<Quote>> {
    if hf >= WAD {
        return None;
    }
    let inputs = quote_inputs(
        positions
            .iter()
            .filter_map(|p| Some((p, &pools.get(&p.pool)?.state))),
    );
    best_quote(&inputs, None, None).map(Box::new)
}

/// What the feed shows of an owner's rows, to tell whether they changed.
fn snapshot(positions: &[Held]) -> Vec<(Pubkey, PositionAmounts)> {
    let mut rows: Vec<_> = positions.iter().map(|p| (p.address, p.amounts)).collect();
    rows.sort_by_key(|r| r.0);
    rows
}

#[cfg(test)]
mod history_tests;
#[cfg(test)]
mod processed_tests;
#[cfg(test)]
pub(crate) mod tests;
