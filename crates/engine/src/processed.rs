//! The processed view (docs/design.md §15): a second engine holding the
//! confirmed view with the overlay of the best chain laid over it.
//!
//! It applies every confirmed change too, except where the overlay holds the
//! account at the same or a newer slot (the overlay's slots are above every
//! confirmed one; a newer confirmed read, a reconciliation say, ends the
//! overlay of that account). It applies the overlay's writes, and a retracted
//! account is put back as the confirmed engine holds it, whatever slot the
//! overlay held (the only change that may lower a slot). The write-back of
//! health factors is the confirmed engine's alone.
//!
//! At the feeds' prices (docs/design.md §17) it holds feed readings in its
//! overlay too, and every change reaches its engine through `OracleFeeds`:
//! the processed view valued as the feed view values the confirmed one.

use super::oracle::{FeedReading, OracleFeeds};
use super::*;

/// An account the overlay holds: a pool's state, a position with its owner,
/// a position closed at processed, or a feed's reading.
#[derive(Debug, Clone, PartialEq)]
pub enum OverlayWrite {
    Pool(PoolState),
    Feed {
        feed: Pubkey,
        reading: FeedReading,
    },
    Position {
        owner: Pubkey,
        position: PositionState,
    },
    Closed {
        owner: Pubkey,
        position: Pubkey,
        slot: u64,
    },
}

impl OverlayWrite {
    pub fn account(&self) -> Pubkey {
        match self {
            OverlayWrite::Pool(state) => state.address,
            OverlayWrite::Feed { feed, .. } => *feed,
            OverlayWrite::Position { position, .. } => position.address,
            OverlayWrite::Closed { position, .. } => *position,
        }
    }

    fn slot(&self) -> u64 {
        match self {
            OverlayWrite::Pool(state) => state.slot,
            OverlayWrite::Feed { reading, .. } => reading.slot,
            OverlayWrite::Position { position, .. } => position.slot,
            OverlayWrite::Closed { slot, .. } => *slot,
        }
    }

    fn owner(&self) -> Option<&Pubkey> {
        match self {
            OverlayWrite::Pool(_) | OverlayWrite::Feed { .. } => None,
            OverlayWrite::Position { owner, .. } | OverlayWrite::Closed { owner, .. } => {
                Some(owner)
            }
        }
    }

    fn change(self) -> Change {
        match self {
            OverlayWrite::Pool(state) => Change::Pool(state),
            OverlayWrite::Feed { feed, reading } => Change::Feed { feed, reading },
            OverlayWrite::Position { owner, position } => Change::Position {
                owner,
                position,
                // Never written back: the confirmed engine writes.
                row_health_factor: u128::MAX,
            },
            OverlayWrite::Closed {
                owner,
                position,
                slot,
            } => Change::Removed {
                owner,
                position,
                slot,
            },
        }
    }
}

/// The processed view: its engine and what the overlay holds.
pub struct Processed {
    engine: Engine,
    overlay: FastMap<Pubkey, OverlayWrite>,
    /// Overlaid writes a confirmed change of this tick ended: set as the
    /// confirmed engine holds them once it took the tick (`settle_confirmed`).
    ended: Vec<OverlayWrite>,
    /// At the feeds' prices: how pools are priced, and each feed's confirmed
    /// reading (what a reading taken back returns to).
    feeds: Option<Box<ProcessedFeeds>>,
}

#[derive(Default)]
struct ProcessedFeeds {
    priced: OracleFeeds,
    confirmed: FastMap<Pubkey, FeedReading>,
}

impl Processed {
    pub fn new(max_owners: usize) -> Processed {
        let mut engine = Engine::new(max_owners);
        engine.commitment = Commitment::Processed;
        engine.record_events(true);
        // Its owners hold the confirmed engine's positions while equal.
        engine.note_position_writes();
        Processed {
            engine,
            overlay: FastMap::default(),
            ended: Vec::new(),
            feeds: None,
        }
    }

    /// The processed view at the feeds' prices.
    pub fn at_feeds(max_owners: usize) -> Processed {
        let mut engine = Engine::at_feeds(max_owners);
        engine.commitment = Commitment::Processed;
        engine.record_events(true);
        engine.note_position_writes();
        Processed {
            feeds: Some(Box::default()),
            engine,
            ..Processed::new(max_owners)
        }
    }

    /// Emptied, and every pool as loaded (at `readings` where feeds price
    /// it; the owners and the overlay follow).
    pub fn load(&mut self, pools: &[PoolState], readings: &[(Pubkey, FeedReading)]) {
        self.engine.clear();
        self.overlay.clear();
        self.ended.clear();
        let pools: Vec<PoolState> = match &mut self.feeds {
            None => pools.to_vec(),
            Some(feeds) => {
                **feeds = ProcessedFeeds::default();
                for (feed, reading) in readings {
                    feeds.priced.reading(feed, *reading);
                    feeds.confirmed.insert(*feed, *reading);
                }
                (pools.iter())
                    .map(|p| feeds.priced.restore_copy(p.clone()))
                    .collect()
            }
        };
        for pool in pools {
            self.engine.upsert_pool(pool);
        }
    }

    /// Changes as this engine takes them: through the feeds' pricing where
    /// it values at them.
    fn priced(&mut self, changes: Vec<Change>) -> Vec<Change> {
        match &mut self.feeds {
            None => changes,
            Some(feeds) => feeds.priced.translate(&changes).changes,
        }
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// For loads and reads of evicted owners, which fill it as they fill the
    /// confirmed engine (and then `relay` the overlay of what they loaded).
    pub fn engine_mut(&mut self) -> &mut Engine {
        &mut self.engine
    }

    /// Accounts the overlay holds.
    pub fn overlay_len(&self) -> usize {
        self.overlay.len()
    }

    /// The overlay's entry for an account.
    pub fn overlaid(&self, account: &Pubkey) -> Option<&OverlayWrite> {
        self.overlay.get(account)
    }

    /// A tick of confirmed changes, after `confirmed` took it: applied, but
    /// where the overlay holds the account at the same or a newer slot; a
    /// newer one ends its overlay. Where an owner's inputs are the
    /// confirmed engine's, its scores are taken from there (`twin.rs`).
    pub fn apply_confirmed(&mut self, changes: &[Change], confirmed: &Engine) -> Unapplied {
        let mut kept = Vec::with_capacity(changes.len());
        for change in changes {
            let account = match change {
                Change::Pool(state) => Some((state.address, state.slot)),
                Change::Position { position, .. } => Some((position.address, position.slot)),
                Change::Removed { position, slot, .. } => Some((*position, *slot)),
                Change::PoolRemoved(address) => {
                    self.overlay.remove(address);
                    None
                }
                Change::Feed { feed, reading } => {
                    let Some(feeds) = &mut self.feeds else {
                        continue;
                    };
                    // The confirmed engine's rule: an older reading is refused.
                    let held = feeds.confirmed.entry(*feed).or_insert(*reading);
                    if held.slot <= reading.slot {
                        *held = *reading;
                    }
                    Some((*feed, reading.slot))
                }
                Change::Touched { .. } | Change::PoolTouched { .. } => None,
            };
            if let Some((account, slot)) = account
                && let Some(held) = self.overlay.get(&account)
            {
                if held.slot() >= slot {
                    continue;
                }
                self.ended.extend(self.overlay.remove(&account));
            }
            kept.push(change.clone());
        }
        let kept = self.priced(kept);
        let unapplied = self.engine.apply_beside(kept, confirmed);
        self.engine.take_dirty();
        unapplied
    }

    /// After the confirmed engine took the tick `apply_confirmed` was given:
    /// each account whose overlay that tick ended is set as the confirmed
    /// engine holds it (which refused a change older than what it holds,
    /// where the overlay had been older still).
    pub fn settle_confirmed(&mut self, confirmed: &Engine) -> Unapplied {
        let ended = std::mem::take(&mut self.ended);
        let unapplied = self.restore_from(ended, confirmed);
        self.engine.take_dirty();
        self.engine.share_positions(confirmed);
        unapplied
    }

    /// The overlay moves: `retracted` accounts go back to what `confirmed`
    /// holds, then `set` is laid over. An owner the confirmed engine cannot
    /// answer for (evicted) comes back in `Unapplied`: read it from the
    /// database into this engine, then `relay` it.
    pub fn apply_overlay(
        &mut self,
        set: Vec<OverlayWrite>,
        retracted: &[Pubkey],
        confirmed: &Engine,
    ) -> Unapplied {
        let removed = retracted
            .iter()
            .filter_map(|a| self.overlay.remove(a))
            .collect();
        let mut unapplied = self.restore_from(removed, confirmed);
        let mut changes = Vec::with_capacity(set.len());
        for write in set {
            // Only a view at the feeds' prices holds feeds.
            if matches!(write, OverlayWrite::Feed { .. }) && self.feeds.is_none() {
                continue;
            }
            // Older than what this view holds of the account (a newer
            // confirmed read ended its overlay): not laid.
            if self
                .held_slot(&write)
                .is_some_and(|held| held > write.slot())
            {
                continue;
            }
            self.overlay.insert(write.account(), write.clone());
            changes.push(write.change());
        }
        let changes = self.priced(changes);
        let last = self.engine.apply(changes);
        self.engine.take_dirty();
        self.engine.share_positions(confirmed);
        unapplied.owners.extend(last.owners);
        unapplied.pools.extend(last.pools);
        unapplied
    }

    /// Overlaid writes taken off: their accounts set as `confirmed` holds
    /// them (an owner it cannot answer for is to be read back).
    fn restore_from(&mut self, removed: Vec<OverlayWrite>, confirmed: &Engine) -> Unapplied {
        let (mut unapplied, mut restore) = (Unapplied::default(), Vec::new());
        for write in removed {
            match write {
                OverlayWrite::Pool(state) => {
                    if let Some(entry) = confirmed.pool(&state.address) {
                        let copy = entry.state.clone();
                        restore.push(Change::Pool(match &mut self.feeds {
                            None => copy,
                            Some(feeds) => feeds.priced.restore_copy(copy),
                        }));
                    }
                }
                OverlayWrite::Feed { feed, .. } => {
                    let Some(feeds) = &mut self.feeds else {
                        continue;
                    };
                    // Back to the confirmed reading; none: the feed as if
                    // never read (the pools at their copies).
                    let moved = match feeds.confirmed.get(&feed) {
                        Some(reading) => feeds.priced.restore_reading(&feed, *reading),
                        None => feeds.priced.forget_reading(&feed),
                    };
                    restore.extend(moved.into_iter().map(Change::Pool));
                }
                OverlayWrite::Position {
                    owner,
                    position:
                        PositionState {
                            address: position, ..
                        },
                }
                | OverlayWrite::Closed {
                    owner, position, ..
                } => match confirmed_position(confirmed, &owner, &position) {
                    Some(Some(held)) => restore.push(Change::Position {
                        owner,
                        position: held,
                        row_health_factor: u128::MAX,
                    }),
                    Some(None) => restore.push(Change::Removed {
                        owner,
                        position,
                        slot: 0,
                    }),
                    None => unapplied.owners.push(owner),
                },
            }
        }
        // A pool restored twice (its copy and its feed both taken back):
        // its last state alone, or the first's slot would refuse the second.
        let mut seen = FastSet::default();
        let mut restore: Vec<Change> = (restore.into_iter().rev())
            .filter(|c| match c {
                Change::Pool(state) => seen.insert(state.address),
                _ => true,
            })
            .collect();
        restore.reverse();
        let more = self.engine.restore(restore);
        unapplied.owners.extend(more.owners);
        unapplied.pools.extend(more.pools);
        unapplied
    }

    /// The slot this view holds of the write's account, if it holds it.
    fn held_slot(&self, write: &OverlayWrite) -> Option<u64> {
        match write {
            // At the feeds' prices a pool's slot is its copy's or its
            // feed's, whichever is newer: the copy's is compared.
            OverlayWrite::Pool(state) => match &self.feeds {
                Some(feeds) => feeds.priced.copy_of(&state.address).map(|p| p.slot),
                None => self.engine.pool(&state.address).map(|p| p.state.slot),
            },
            OverlayWrite::Feed { feed, .. } => {
                let feeds = self.feeds.as_ref()?;
                feeds.priced.reading_of(feed).map(|r| r.slot)
            }
            OverlayWrite::Position { owner, .. } | OverlayWrite::Closed { owner, .. } => {
                let account = write.account();
                let view = self.engine.peek(owner)?;
                (view.positions.iter())
                    .find(|(held, _)| held.address == account)
                    .map(|(held, _)| held.slot)
            }
        }
    }

    /// Lays the overlay over `owners` again, after they were read from the
    /// database (as confirmed) into this engine.
    pub fn relay(&mut self, owners: &[Pubkey]) {
        let changes: Vec<Change> = (self.overlay.values())
            .filter(|w| w.owner().is_some_and(|owner| owners.contains(owner)))
            .map(|w| w.clone().change())
            .collect();
        self.engine.restore(changes);
        self.engine.take_dirty();
    }
}

/// A position as the confirmed engine holds it: None when it cannot answer
/// for the owner, Some(None) when the owner holds no such position.
fn confirmed_position(
    confirmed: &Engine,
    owner: &Pubkey,
    position: &Pubkey,
) -> Option<Option<PositionState>> {
    match confirmed.peek(owner) {
        Some(view) => Some(
            (view.positions.iter())
                .find(|(held, _)| held.address == *position)
                .map(|(held, pool)| held.state(pool.state.address)),
        ),
        None if confirmed.knows(owner) => Some(None),
        None => None,
    }
}
