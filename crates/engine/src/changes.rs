//! Committed changes of the index, applied to the engine as they were
//! committed: one tick of the feed's change log (`db::feed_log`) at a time, in
//! commit order. Every change carries the slot of the chain read it holds,
//! and one older than what the engine holds is passed over, so a change can
//! never regress an owner.

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
}

impl Change {
    /// The owner a position change is of.
    pub fn owner(&self) -> Option<Pubkey> {
        match self {
            Change::Pool(_) | Change::PoolRemoved(_) | Change::PoolTouched { .. } => None,
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
        for (address, m) in moved {
            if self.rescore_moved(m) {
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
                let Some(&id) = self.index.get(&owner) else {
                    return;
                };
                if let Some(p) = self.owners[id as usize]
                    .positions
                    .iter_mut()
                    .find(|p| p.address == position)
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
                let Some(&pool_id) = self.pool_ids.get(&pool) else {
                    return;
                };
                let members: Vec<Slot> = self.pools[&pool_id].members.iter().copied().collect();
                for member in members {
                    for p in &mut self.owners[member as usize].positions {
                        if p.pool == pool_id && p.slot < slot {
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
        let resident = self.index.get(&key).copied();
        let mut positions: Vec<PositionState> = match resident {
            Some(id) => self.owners[id as usize]
                .positions
                .iter()
                .filter_map(|p| Some(p.state(self.pools.get(&p.pool)?.state.address)))
                .collect(),
            None => Vec::new(),
        };
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
                    let stored = resident.and_then(|id| self.owners[id as usize].stored_hf);
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
            self.owners[id as usize].stored_hf = None;
        }
        self.replace_owner(key, positions, removed_at);
    }
}
