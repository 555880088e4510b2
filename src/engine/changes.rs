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
}

impl Change {
    /// The owner a position change is of.
    pub fn owner(&self) -> Option<Pubkey> {
        match self {
            Change::Pool(_) | Change::PoolRemoved(_) => None,
            Change::Position { owner, .. } | Change::Removed { owner, .. } => Some(*owner),
        }
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
    /// Applies committed changes: pools first (owners re-scored after see the
    /// new prices), then each owner's edits at once.
    pub fn apply(&mut self, changes: Vec<Change>) -> Unapplied {
        let mut unapplied = Unapplied::default();
        let mut owners: Vec<(Pubkey, Vec<Edit>)> = Vec::new();
        let mut at: FastMap<Pubkey, usize> = FastMap::default();
        for change in changes {
            let (owner, edit) = match change {
                Change::Pool(state) => {
                    let address = state.address;
                    if self.upsert_pool(state) {
                        unapplied.pools.push(address);
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
            };
            let i = *at.entry(owner).or_insert_with(|| {
                owners.push((owner, Vec::new()));
                owners.len() - 1
            });
            owners[i].1.push(edit);
        }
        for (owner, edits) in owners {
            if !self.knows(&owner) {
                unapplied.owners.push(owner);
                continue;
            }
            self.edit_owner(owner, edits);
        }
        unapplied
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
