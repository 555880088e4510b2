//! Committed changes of the index, applied to the engine as they were
//! committed: one tick of the change log (`lendex_store::change_log`) at a time, in
//! commit order. Every change carries the slot of the chain read it holds,
//! and one older than what the engine holds is passed over, so a change can
//! never regress an owner.

use super::parallel::par_map;
use super::*;

/// One committed change.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A pool's state as stored.
    Pool(PoolState),
    /// A pool gone from the index (its positions with it).
    PoolRemoved(Pubkey),
    /// A position as stored, with the health factor its row holds.
    Position {
        owner: Pubkey,
        position: PositionState,
        row_health_factor: u128,
    },
    /// A position removed from the index by a read at `slot` (closed on chain).
    Removed {
        owner: Pubkey,
        position: Pubkey,
        slot: u64,
    },
    /// A position read again at `slot` with its data unchanged: only its
    /// sync time and slot move (no re-score, no event).
    Touched {
        owner: Pubkey,
        position: Pubkey,
        slot: u64,
        synced_us: i64,
    },
    /// A pool's reconciliation read at `slot`: every position of the pool
    /// held at a lower slot was stamped with `slot` and `synced_us`.
    PoolTouched {
        pool: Pubkey,
        slot: u64,
        synced_us: i64,
    },
    /// A pool's feed account as read (docs/design.md §17): what the feed
    /// views price with (`oracle::OracleFeeds`); the pool view passes over it.
    Feed {
        feed: Pubkey,
        reading: crate::oracle::FeedReading,
    },
}

impl Change {
    /// The owner a position change is of.
    pub fn owner(&self) -> Option<Pubkey> {
        match self {
            Change::Pool(_)
            | Change::PoolRemoved(_)
            | Change::PoolTouched { .. }
            | Change::Feed { .. } => None,
            Change::Position { owner, .. }
            | Change::Removed { owner, .. }
            | Change::Touched { owner, .. } => Some(*owner),
        }
    }

    /// Whether it touches every member of a pool (their answers all change).
    pub fn is_pool_wide(&self) -> bool {
        matches!(
            self,
            Change::Pool(_) | Change::PoolRemoved(_) | Change::PoolTouched { .. }
        )
    }
}

/// What the engine could not apply from memory and must read from the
/// database: owners it no longer holds (evicted, so their other positions are
/// in the database only), and pools whose evicted members must be re-scored.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Unapplied {
    pub owners: Vec<Pubkey>,
    pub pools: Vec<Pubkey>,
}

enum Edit {
    Upsert(PositionState, u128),
    Remove(Pubkey, u64),
}

impl Engine {
    /// Applies committed changes: every pool's new state first, then their
    /// members re-scored once with all of them, then each owner's edits at
    /// once, then the touches (they move sync times and slots only, after the
    /// rows they may follow).
    pub fn apply(&mut self, changes: Vec<Change>) -> Unapplied {
        self.apply_with(changes, None)
    }

    /// `apply`, after `twin` applied the same changes: members of a repriced
    /// pool whose positions and pools are the twin's take its scores instead
    /// of computing them again (`twin.rs`; docs/design.md §17).
    pub fn apply_beside(&mut self, changes: Vec<Change>, twin: &Engine) -> Unapplied {
        self.apply_with(changes, Some(twin))
    }

    fn apply_with(&mut self, changes: Vec<Change>, twin: Option<&Engine>) -> Unapplied {
        let mut unapplied = Unapplied::default();
        let mut owners: Vec<(Pubkey, Vec<Edit>)> = Vec::new();
        let mut at: FastMap<Pubkey, usize> = FastMap::default();
        let mut touches = Vec::new();
        let mut moved = Vec::new();
        for change in changes {
            let (owner, edit) = match change {
                Change::Pool(state) => {
                    let address = state.address;
                    if let Some(m) = self.set_pool(state) {
                        moved.push((address, m));
                    }
                    continue;
                }
                Change::PoolRemoved(address) => {
                    self.remove_pool(&address);
                    continue;
                }
                Change::Position {
                    owner,
                    position,
                    row_health_factor,
                } => (owner, Edit::Upsert(position, row_health_factor)),
                Change::Removed {
                    owner,
                    position,
                    slot,
                } => (owner, Edit::Remove(position, slot)),
                Change::Feed { feed, reading } => {
                    self.feed_read(feed, reading);
                    continue;
                }
                touch @ (Change::Touched { .. } | Change::PoolTouched { .. }) => {
                    touches.push(touch);
                    continue;
                }
            };
            let i = *at.entry(owner).or_insert_with(|| {
                owners.push((owner, Vec::new()));
                owners.len() - 1
            });
            owners[i].1.push(edit);
        }
        // Every pool of the change set first: each member is scored once
        // with all the new prices.
        let twin = (twin.filter(|_| !moved.is_empty())).map(|t| TwinScores::new(&self.pools, t));
        for (address, m) in moved {
            if self.rescore_moved(m, twin.as_ref()) {
                unapplied.pools.push(address);
            }
        }
        for (owner, edits) in owners {
            if !self.knows(&owner) {
                unapplied.owners.push(owner);
                continue;
            }
            self.edit_owner(owner, edits);
        }
        for touch in touches {
            self.touch(touch);
        }
        unapplied
    }

    /// A re-read that changed no data: the positions it stamped take its
    /// time, and its slot where theirs is lower (a later write of the same
    /// transaction may hold a higher one). Owners not resident are read from
    /// the database as stored when they come back.
    fn touch(&mut self, touch: Change) {
        match touch {
            Change::Touched {
                owner,
                position,
                slot,
                synced_us,
            } => {
                let Some(id) = self.owners.slot_of(&owner) else {
                    return;
                };
                if let Some(p) =
                    (self.owners.positions_mut(id).iter_mut()).find(|p| p.address == position)
                {
                    p.synced_us = synced_us;
                    p.slot = p.slot.max(slot);
                }
            }
            Change::PoolTouched {
                pool,
                slot,
                synced_us,
            } => {
                let Some(pool_id) = self.pools.id_of(&pool) else {
                    return;
                };
                let stamped = |p: &Held| p.pool == pool_id && p.slot < slot;
                for member in self.pools.members(pool_id) {
                    // Copied from a twin's only when something is stamped.
                    if !self.owners.get(member).positions.iter().any(stamped) {
                        continue;
                    }
                    for p in self.owners.positions_mut(member) {
                        if stamped(p) {
                            p.slot = slot;
                            p.synced_us = synced_us;
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// An owner's positions with `edits` made, re-scored.
    fn edit_owner(&mut self, key: Pubkey, edits: Vec<Edit>) {
        let resident = self.owners.slot_of(&key);
        let mut positions: Vec<PositionState> = match resident {
            Some(id) => self.positions_of(id),
            None => Vec::new(),
        };
        let stored = resident.and_then(|id| self.owners.get(id).stored_hf);
        let mut rows_stored_elsewise = false;
        let mut removed_at = 0;
        for edit in edits {
            match edit {
                Edit::Upsert(state, row_hf) => {
                    match positions.iter_mut().find(|p| p.address == state.address) {
                        Some(held) if held.slot > state.slot => continue,
                        Some(held) => *held = state,
                        None => positions.push(state),
                    }
                    rows_stored_elsewise |= stored != Some(row_hf);
                }
                Edit::Remove(address, slot) => {
                    removed_at = removed_at.max(slot);
                    positions.retain(|p| p.address != address || p.slot > slot);
                }
            }
        }
        // A row holding another value than the owner's stored one (a new row
        // has the column's default) must be written, whatever the score.
        if rows_stored_elsewise && let Some(id) = resident {
            self.owners.get_mut(id).stored_hf = None;
        }
        self.replace_owner(key, positions, removed_at);
    }

    /// Applies `changes` whatever slots the engine holds of their accounts:
    /// a retraction puts back an older state (docs/design.md §15).
    pub(crate) fn restore(&mut self, changes: Vec<Change>) -> Unapplied {
        for change in &changes {
            let (owner, position) = match change {
                Change::Pool(state) => {
                    self.pools.forget_slot(&state.address);
                    continue;
                }
                Change::Position {
                    owner, position, ..
                } => (owner, &position.address),
                Change::Removed {
                    owner, position, ..
                } => (owner, position),
                _ => continue,
            };
            if let Some(id) = self.owners.slot_of(owner)
                && let Some(held) =
                    (self.owners.positions_mut(id).iter_mut()).find(|p| p.address == *position)
            {
                held.slot = 0;
            }
        }
        self.apply(changes)
    }

    // ---- a pool's new price or terms ----------------------------------------------

    /// A pool's liquidation terms changed (not its pricing), or its crank
    /// flag: its members under water get new quotes, and the feed says so.
    pub(crate) fn requote_pool(&mut self, id: PoolId, recrank: bool) {
        self.filing.bump();
        for member in self.pools.members(id) {
            let owner = self.owners.get(member);
            let (key, hf) = (owner.key, owner.hf);
            let quote = quote_of(&self.pools, &owner.positions, hf);
            let owner = self.owners.get_mut(member);
            if hf < WAD && (owner.quote != quote || recrank) {
                owner.quote = quote;
                self.filing.emit(FeedEvent::Update(key, hf));
            }
        }
    }

    /// Re-scores every resident member of a repriced pool. An owner that stays
    /// healthy, or stays in the watch band, is updated in place, without touching
    /// the LRU order or the ranking (the common case of a price move).
    ///
    /// The scores, and the quotes of the members under water, depend only on
    /// the pools and each owner's own positions, so they are computed on all
    /// cores first; filing them (ranking, LRU, events, write-back) stays
    /// sequential and in member order.
    pub(crate) fn rescore_pool(
        &mut self,
        id: PoolId,
        cause: Cause,
        recrank: bool,
        twin: Option<&TwinScores<'_>>,
    ) {
        // An earlier re-score's values are noted before this one moves them.
        self.settle_notes();
        // In slot order: owners and their positions were allocated in load order,
        // so this walks memory forwards instead of in the set's hash order (the
        // re-score is bound by cache misses, not arithmetic).
        let members = self.pools.members(id);
        let (pools, owners, this) = (&self.pools, &self.owners, &*self);
        // While history records, each owner's sums and slot are taken in the
        // same pass as its health factor (the §3 value of those sums), on
        // every core; they are kept for the owners whose new value will be
        // recorded, and noted after the feed's publish (`defer_note`).
        let recording = self.is_recording_history();
        let scored = par_map(&members, |&member| {
            let owner = owners.get(member);
            // History's sums are this engine's own work (the twin's are not
            // kept).
            if !recording && let Some((hf, quote)) = twin.and_then(|t| t.scored(owner)) {
                return (hf, quote, None);
            }
            let (hf, valued) = if recording {
                let (sums, valued) = history::valued_of(pools, &owner.positions);
                (sums.health_factor(), Some(valued))
            } else {
                (score(pools, &owner.positions), None)
            };
            let valued = valued.filter(|_| this.history_qualifies(owner, hf));
            (hf, quote_of(pools, &owner.positions, hf), valued)
        });
        self.filing.reserve_dirty(members.len());
        for (member, (hf, quote, valued)) in members.into_iter().zip(scored) {
            let key = self.owners.get(member).key;
            if self.owners.slot_of(&key) != Some(member) {
                continue; // evicted during this loop: re-loaded by the caller
            }
            let owner = self.owners.get_mut(member);
            let old = owner.hf;
            if old >= WAD && hf >= WAD {
                // Above water before and after: in place (no LRU move, no
                // ranking); only the watch band's count and version follow.
                self.filing.shift_above_water(old, hf);
                owner.hf = hf;
                self.filing.valued(key, hf, owner.stored_hf);
                self.filing.moved(key, Some(old), hf);
            } else {
                // A new crank flag changes the entry as new rows would.
                self.refile(member, hf, Some(old), recrank, quote);
            }
            if let Some(valued) = valued {
                self.defer_note(member, cause, valued);
            }
        }
        // Owners that left the watch band upwards are evictable again.
        let evicted = self.owners.evict_past_cap(None);
        self.evict(evicted);
    }
}
