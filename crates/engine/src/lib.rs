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
pub use filing::Move;
pub mod history;
mod history_feeds;
pub mod oracle;
mod owners;
pub mod parallel;
pub mod pool_status;
mod pools;
pub mod processed;
pub mod quotes;
pub mod risk;
#[cfg(any(test, feature = "sample"))]
pub mod sample;
pub mod state;
mod twin;
pub mod unhealthy;
pub mod view;

use std::collections::{HashMap, HashSet};

pub use changes::{Change, Unapplied};
pub use events::FeedEvent;
use filing::{Filing, Standing};
use owners::OwnerSlab;
use pools::{Moved, PoolTable, Set};
pub use state::{Held, PoolEntry, PoolState, PositionState};
use twin::TwinScores;
use view::{OwnerView, quote_inputs};

use lendex_domain::forks::Commitment;
use lendex_domain::history::Cause;
use lendex_domain::liquidation::{Quote, best_quote};
use lendex_domain::pubkey::{Pubkey, cmp_as_text};
use lendex_domain::view_key::{Oracle, ViewKey};
use lendex_domain::wad::{PositionAmounts, WAD, account_health_factor};
use lendex_domain::webhooks::crossing::MAX_LINE;

/// Owners at or above 1 WAD and below this are watched (the at-risk list): never
/// evicted, like the owners under water.
pub const WATCH_BELOW: u128 = 2 * WAD;

type Hasher = foldhash::fast::RandomState;
pub type FastMap<K, V> = HashMap<K, V, Hasher>;
type FastSet<K> = HashSet<K, Hasher>;

/// A pool's dense id inside the engine: members are tracked per id, not per key.
type PoolId = u32;
/// An owner's place in the slab.
type Slot = u32;

/// The engine's parts each own their state: the pools (`pools.rs`), the
/// resident owners and their LRU (`owners.rs`), and the standing of each
/// owner with what readers learn of it (`filing.rs`). The engine keeps them
/// consistent with each other.
pub struct Engine {
    pools: PoolTable,
    owners: OwnerSlab,
    filing: Filing,
    /// During a full reload: who was under water before it (with its slot).
    was_unhealthy: Option<FastMap<Pubkey, u64>>,
    /// History's recorder, while this engine records (the leader).
    history: Option<Box<history::Recorder>>,
    /// Each feed's last reading from the change log (`history_feeds.rs`).
    feed_readings: FastMap<Pubkey, oracle::FeedReading>,
    /// The view this engine holds (docs/design.md §15, §17), named in its
    /// quotes and events.
    commitment: Commitment,
    oracle: Oracle,
}

impl Engine {
    pub fn new(max_owners: usize) -> Self {
        Engine {
            pools: PoolTable::default(),
            owners: OwnerSlab::new(max_owners),
            filing: Filing::default(),
            was_unhealthy: None,
            history: None,
            feed_readings: FastMap::default(),
            commitment: Commitment::Confirmed,
            oracle: Oracle::Pool,
        }
    }

    /// An engine of the feed valuation (docs/design.md §17): the pools it is
    /// given are priced by `oracle::OracleFeeds`; it writes nothing back.
    pub fn at_feeds(max_owners: usize) -> Self {
        Engine {
            oracle: Oracle::Feed,
            ..Engine::new(max_owners)
        }
    }

    /// The view this engine holds (its quotes and events say so).
    pub fn commitment(&self) -> Commitment {
        self.commitment
    }

    /// The price this engine values pools at (its quotes and events say so,
    /// and in the feed view they list the pools to crank).
    pub fn oracle(&self) -> Oracle {
        self.oracle
    }

    /// The view this engine holds.
    pub fn view_key(&self) -> ViewKey {
        ViewKey::new(self.commitment, self.oracle)
    }

    /// Forgets everything (before a full reload); `end_reload` then tells the
    /// feed what the reload changed.
    pub fn clear(&mut self) {
        self.settle_notes();
        let was_unhealthy: FastMap<Pubkey, u64> = if self.filing.records_events() {
            self.filing
                .ranking()
                .map(|(_, key)| (key, self.peek(&key).map_or(0, |v| v.slot())))
                .collect()
        } else {
            FastMap::default()
        };
        // History's baselines outlive the reload: owners come back to them.
        let resident: Vec<Slot> = self.owners.slots().collect();
        for id in resident {
            if let Some(b) = self.owners.get_mut(id).recorded.take() {
                let key = self.owners.get(id).key;
                self.park_baseline(key, b);
            }
        }
        // Webhooks judge the reload as one change from these values.
        let moved_from = self.filing.records_moves().then(|| {
            (self.owners.resident())
                .filter(|o| o.hf < MAX_LINE)
                .map(|o| (o.key, o.hf))
                .collect()
        });
        let filing = self.filing.after(moved_from);
        let (history, commitment, oracle) = (self.history.take(), self.commitment, self.oracle);
        let notes_writes = self.owners.notes_writes();
        *self = Engine::new(self.owners.max_owners());
        if notes_writes {
            self.owners.note_writes();
        }
        self.history = history;
        self.commitment = commitment;
        self.oracle = oracle;
        self.history_loading(true);
        self.filing = filing;
        self.was_unhealthy = Some(was_unhealthy);
    }

    /// After a full reload: the feed continues as if the changes had come one
    /// by one. An owner under water before and after is updated (not started
    /// twice); one under water before and not now is stopped. The moves kept
    /// are those from before the reload to after it.
    pub fn end_reload(&mut self) {
        self.history_loading(false);
        self.filing.reloaded();
        let Some(was) = self.was_unhealthy.take() else {
            return;
        };
        self.filing.restarted(&was);
        let mut recovered: Vec<(Pubkey, u64)> = was
            .into_iter()
            .filter(|(owner, _)| self.health_factor(owner).is_none_or(|hf| hf >= WAD))
            .collect();
        recovered.sort_unstable();
        for (owner, slot) in recovered {
            match self.health_factor(&owner) {
                Some(hf) => self.filing.emit(FeedEvent::Stop(owner, hf)),
                None => self.filing.emit(FeedEvent::Gone(owner, slot)),
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
            Some(moved) => self.rescore_moved(moved, None),
            None => false,
        }
    }

    /// A pool's new state, without re-scoring anyone yet: what moved, when
    /// its members must be re-scored or re-quoted (`rescore_moved`). Several
    /// pools of one change are all set first, so each member is scored once
    /// with every new price, never through a mix that existed at no slot's end.
    pub(crate) fn set_pool(&mut self, state: PoolState) -> Option<Moved> {
        let address = state.address;
        let named = self
            .history
            .is_some()
            .then(|| self.pool(&address).map(|p| p.state.feed));
        let (id, moved) = match self.pools.set(state) {
            Set::Unchanged => {
                // Naming another feed moves no value here, but history
                // records the new feed's price.
                if named.is_some_and(|before| before != self.pool(&address).map(|p| p.state.feed)) {
                    self.note_feed_price(&address);
                }
                return None;
            }
            Set::New(id) => (id, None),
            Set::Moved(moved) => (moved.id, Some(moved)),
        };
        self.filing.bump();
        if self.history.is_some() {
            let state = self.pools.get(id).expect("just set").state.clone();
            self.note_oracle(&state);
            self.note_feed_price(&address);
        }
        moved
    }

    /// Re-scores (or, for new terms alone, re-quotes) the members of a pool
    /// `set_pool` moved; true when it has evicted members to re-load.
    /// With `twin`, members whose positions and pools are its own take its
    /// scores (`twin.rs`).
    pub(crate) fn rescore_moved(&mut self, moved: Moved, twin: Option<&TwinScores<'_>>) -> bool {
        if self.pools.get(moved.id).is_none() {
            return false; // removed since
        }
        if !moved.repriced {
            self.requote_pool(moved.id, moved.recrank);
            return false;
        }
        self.rescore_pool(moved.id, moved.cause, moved.recrank, twin);
        // Read after the re-score: a member that turned healthy may have evicted
        // another that has not been re-scored yet.
        self.pools.has_evicted_members(moved.id)
    }

    /// A pool gone from the index: its positions are gone with it (cascade).
    pub fn remove_pool(&mut self, address: &Pubkey) {
        let Some(entry) = self.pools.remove(address) else {
            return;
        };
        self.filing.bump();
        let mut members: Vec<Slot> = entry.members.iter().copied().collect();
        members.sort_unstable();
        for slot in members {
            let key = self.owners.get(slot).key;
            let kept = self.positions_of(slot);
            self.set_owner(key, kept);
        }
    }

    /// Every pool held, in no order.
    pub fn pools(&self) -> impl Iterator<Item = &PoolEntry> {
        self.pools.entries().map(|(_, entry)| entry)
    }

    pub fn pool(&self, address: &Pubkey) -> Option<&PoolEntry> {
        self.pools.by_address(address)
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
                let pool = self.pools.id_of(&state.pool)?;
                Some(Held::new(state, pool))
            })
            .collect();
        let existing = self.owners.slot_of(&key);
        if let Some(id) = existing {
            // History notes a re-scored value before the change that follows it.
            self.settle_note(id);
        }
        if held.is_empty() {
            if let Some(id) = existing {
                let (hf, last) = (self.owners.get(id).hf, self.owners.get(id).recorded);
                let slot = self.view_of(id).slot().max(removed_at);
                self.release(id);
                let (cause, _) = self.owner_change(true);
                self.note_gone(key, last, slot, cause);
                if hf < WAD {
                    self.filing.bump();
                    self.filing.emit(FeedEvent::Gone(key, slot));
                }
            }
            return;
        }
        let (id, old) = match existing {
            Some(id) => {
                let owner = self.owners.get_mut(id);
                let old = (owner.hf, snapshot(&owner.positions));
                for p in std::mem::take(&mut owner.positions).iter() {
                    self.pools.leave(p.pool, id);
                }
                (id, Some(old))
            }
            None => {
                let recorded = self.unpark(&key);
                (self.owners.alloc(key, recorded), None)
            }
        };
        for p in &held {
            self.pools.join(p.pool, id);
        }
        let hf = score(&self.pools, &held);
        let quote = quote_of(&self.pools, &held, hf);
        let rows_changed = old
            .as_ref()
            .is_none_or(|(_, rows)| *rows != snapshot(&held));
        self.owners.set_positions(id, held);
        self.refile(id, hf, old.as_ref().map(|(h, _)| *h), rows_changed, quote);
        let (cause, changed) = self.owner_change(rows_changed);
        self.note_owner(id, cause, changed, None);
        if rows_changed && let Some((before_hf, before)) = &old {
            self.note_liquidation(id, *before_hf, before);
        }
    }

    /// An owner's positions as the engine was given them.
    fn positions_of(&self, id: Slot) -> Vec<PositionState> {
        (self.owners.get(id).positions.iter())
            .filter_map(|p| Some(p.state(self.pools.address(p.pool)?)))
            .collect()
    }

    /// Records an owner's new health factor and quote (`quote_of` its state),
    /// files it by standing (ranking, watch list, or LRU), and emits the feed
    /// event of the transition. `old` is the previous value of a resident owner.
    fn refile(
        &mut self,
        id: Slot,
        hf: u128,
        old: Option<u128>,
        rows_changed: bool,
        quote: Option<Box<Quote>>,
    ) {
        let owner = self.owners.get_mut(id);
        let key = owner.key;
        owner.hf = hf;
        self.filing.valued(key, hf, owner.stored_hf);
        self.filing.moved(key, old, hf);
        let quote_changed = owner.quote != quote;
        owner.quote = quote;
        let was = old.map(filing::standing);
        if let Some(old) = old {
            self.filing.leave(key, old);
        }
        match self.filing.enter(key, hf) {
            Standing::Unhealthy => {
                self.owners.unhealthy(id);
                if was != Some(Standing::Unhealthy) {
                    self.filing.emit(FeedEvent::Start(key, hf));
                } else if old != Some(hf) || rows_changed || quote_changed {
                    self.filing.emit(FeedEvent::Update(key, hf));
                }
                return;
            }
            Standing::Watched | Standing::Healthy => {
                let evicted = self.owners.keep(id);
                self.evict(evicted);
            }
        }
        if was == Some(Standing::Unhealthy) {
            self.filing.emit(FeedEvent::Stop(key, hf));
        }
    }

    /// Forgets a slot: out of the index, the ranking, the LRU and its pools.
    fn release(&mut self, id: Slot) {
        self.settle_note(id);
        let owner = self.owners.get_mut(id);
        let positions = std::mem::take(&mut owner.positions);
        let (key, hf, recorded) = (owner.key, owner.hf, owner.recorded.take());
        if let Some(baseline) = recorded {
            self.park_baseline(key, baseline);
        }
        for p in positions.iter() {
            self.pools.leave(p.pool, id);
        }
        self.filing.leave(key, hf);
        self.filing.forget(&key);
        self.owners.free(id);
    }

    /// Owners pushed out of the LRU: their pools remember that a member is
    /// missing.
    fn evict(&mut self, evicted: Vec<Slot>) {
        for id in evicted {
            for p in self.owners.get(id).positions.iter() {
                self.pools.lost_member(p.pool);
            }
            self.release(id);
        }
    }

    /// Records what the database holds for an owner just loaded, so an unchanged
    /// value is not written again.
    pub fn set_stored(&mut self, key: &Pubkey, stored: u128) {
        if let Some(id) = self.owners.slot_of(key) {
            let owner = self.owners.get_mut(id);
            owner.stored_hf = Some(stored);
            if owner.hf == stored {
                self.filing.forget(key);
            }
        }
    }

    /// Whether the owner is resident.
    pub fn holds(&self, key: &Pubkey) -> bool {
        self.owners.slot_of(key).is_some()
    }

    /// True when the engine can answer for this owner: resident, or never evicted
    /// anyone (so an absent owner has no positions).
    pub fn knows(&self, key: &Pubkey) -> bool {
        self.holds(key) || self.owners.evictions() == 0
    }

    pub fn health_factor(&self, key: &Pubkey) -> Option<u128> {
        self.owners.by_key(key).map(|o| o.hf)
    }

    /// An owner's positions with their pools, newest sync first; a read keeps a
    /// healthy owner resident (it moves up in the LRU).
    pub fn view(&mut self, key: &Pubkey) -> Option<OwnerView<'_>> {
        let id = self.owners.slot_of(key)?;
        self.owners.touch(id);
        Some(self.view_of(id))
    }

    /// The same without touching the LRU (rendering the feed).
    pub fn peek(&self, key: &Pubkey) -> Option<OwnerView<'_>> {
        self.owners.slot_of(key).map(|id| self.view_of(id))
    }

    /// Watched owners with a health factor below `below` (at most WATCH_BELOW),
    /// lowest first (ties by key; callers order ties as they need).
    pub fn watched_below(&self, below: u128) -> Vec<(u128, Pubkey)> {
        let mut out: Vec<(u128, Pubkey)> = (self.owners.resident())
            .filter(|o| (WAD..below.min(WATCH_BELOW)).contains(&o.hf))
            .map(|o| (o.hf, o.key))
            .collect();
        out.sort_unstable();
        out
    }

    fn view_of(&self, id: Slot) -> OwnerView<'_> {
        let owner = self.owners.get(id);
        let mut positions: Vec<(&Held, &PoolEntry)> = owner
            .positions
            .iter()
            .filter_map(|p| Some((p, self.pools.get(p.pool)?)))
            .collect();
        // Ties by address as base58 text, as the table orders them
        // (docs/design.md §4.19); a reconcile stamps many rows with one time.
        positions.sort_by(|a, b| {
            b.0.synced_us
                .cmp(&a.0.synced_us)
                .then_with(|| cmp_as_text(&a.0.address, &b.0.address))
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
        self.filing.ranking()
    }

    pub fn owner_count(&self) -> usize {
        self.owners.len()
    }

    pub fn unhealthy_count(&self) -> usize {
        self.filing.unhealthy_count()
    }

    pub fn watched_count(&self) -> usize {
        self.filing.watched_count()
    }

    pub fn evictions(&self) -> u64 {
        self.owners.evictions()
    }

    pub fn version(&self) -> u64 {
        self.filing.version()
    }

    /// The pools and the resident owners, for the passes over the whole book
    /// (the risk lens).
    pub(crate) fn book(&self) -> (&PoolTable, &OwnerSlab) {
        (&self.pools, &self.owners)
    }

    // ---- what changed ------------------------------------------------------------

    /// Whether feed events are kept for `take_events` (the health cache
    /// always keeps them: every replica numbers every event).
    pub fn record_events(&mut self, on: bool) {
        self.filing.record_events(on);
    }

    pub fn take_events(&mut self) -> Vec<FeedEvent> {
        self.filing.take_events()
    }

    /// Whether owners' moves are kept for `take_moves` (while webhooks are
    /// registered: docs/design.md §18).
    pub fn record_moves(&mut self, on: bool) {
        self.filing.record_moves(on);
    }

    /// Every owner's value that moved since the last take, in the order
    /// applied (an owner may move more than once).
    pub fn take_moves(&mut self) -> Vec<Move> {
        self.filing.take_moves()
    }

    /// The health factors to write to `positions`, by owner.
    pub fn take_dirty(&mut self) -> FastMap<Pubkey, u128> {
        self.filing.take_dirty()
    }

    pub fn has_dirty(&self) -> bool {
        self.filing.dirty_count() > 0
    }

    /// How many owners' health factors are to be written.
    pub fn dirty_count(&self) -> usize {
        self.filing.dirty_count()
    }

    /// Forgets what is believed stored: every resident owner's value is to be
    /// written (a replica that becomes the writer of the health factors,
    /// having only believed the previous writer until then).
    pub fn forget_stored(&mut self) {
        let resident: Vec<Slot> = self.owners.slots().collect();
        for id in resident {
            let owner = self.owners.get_mut(id);
            owner.stored_hf = None;
            self.filing.valued(owner.key, owner.hf, None);
        }
    }

    /// The outcome of writing what `take_dirty` gave: stored, or to be written again.
    /// Keeps the invariant: `dirty` holds exactly the owners whose value differs
    /// from what is stored, also when values moved while the write was in flight
    /// (a value that moved back to the old stored one must be written again).
    pub fn written(&mut self, batch: FastMap<Pubkey, u128>, ok: bool) {
        for (key, hf) in batch {
            let Some(id) = self.owners.slot_of(&key) else {
                continue;
            };
            let owner = self.owners.get_mut(id);
            if ok {
                owner.stored_hf = Some(hf);
            }
            self.filing.valued(key, owner.hf, owner.stored_hf);
        }
    }
}

/// An owner's account health factor from its positions and the pools.
fn score(pools: &PoolTable, positions: &[Held]) -> u128 {
    account_health_factor(positions.iter().filter_map(|p| {
        pools
            .get(p.pool)
            .map(|pool| (&pool.state.pricing, &p.amounts))
    }))
}

/// An owner's best liquidation quote while under water (none above water, or
/// when no pair qualifies).
fn quote_of(pools: &PoolTable, positions: &[Held], hf: u128) -> Option<Box<Quote>> {
    if hf >= WAD {
        return None;
    }
    let inputs = quote_inputs(
        positions
            .iter()
            .filter_map(|p| Some((p, &pools.get(p.pool)?.state))),
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
mod oracle_tests;
#[cfg(test)]
mod processed_tests;
#[cfg(test)]
pub(crate) mod tests;
