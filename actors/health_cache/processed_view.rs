//! The processed view this replica serves (docs/design.md §15), beside the
//! confirmed one: its engine (`engine::processed`), its rendered answers and
//! its feed, fed from the same change log in the same order. A tick's
//! confirmed changes reach it as they reach the confirmed engine; the
//! overlay's moves (laid by the leader, `lendex_store::overlay`) reach it alone. Its
//! feed has an epoch of its own, so an id of one view's stream resumed on the
//! other's is told `reset`.

use std::collections::HashSet;

use super::actor::HealthCache;
use super::feed_hub::{FeedHub, Published};
use crate::domain::pubkey::Pubkey;
use crate::engine::processed::{OverlayWrite, Processed};
use crate::engine::{Change, FeedEvent, PoolState, Unapplied};
use crate::feed::poll_answers::{OwnerBody, SharedRendered};
use lendex_store::engine_rows::Owners;
use lendex_store::overlay::OverlayChange;

const ALL_BODIES: [OwnerBody; 2] = [OwnerBody::Positions, OwnerBody::Detail];

/// The processed feed's epoch, from the database's: never one a confirmed
/// feed has (those are milliseconds, below 2^48), the same on every replica.
pub(super) fn processed_epoch(epoch: u64) -> u64 {
    epoch | 1 << 48
}

pub(super) struct ProcessedView {
    pub view: Processed,
    pub rendered: SharedRendered,
    /// The engine version the rendered answers were made from.
    pub rendered_version: u64,
    pub feed: FeedHub,
}

impl ProcessedView {
    pub fn new(max_owners: usize, feed: FeedHub) -> ProcessedView {
        ProcessedView {
            view: Processed::new(max_owners),
            rendered: SharedRendered::default(),
            rendered_version: 0,
            feed,
        }
    }

    fn refresh_rendered(&mut self) {
        let version = self.view.engine().version();
        if version != self.rendered_version {
            self.rendered_version = version;
            self.rendered.forget_answers();
        }
    }
}

impl HealthCache {
    /// A tick's confirmed changes, in the processed view (before the
    /// confirmed engine takes them).
    pub(super) fn apply_processed_changes(&mut self, changes: &[Change]) {
        let Some(p) = &mut self.processed else {
            return;
        };
        if changes.is_empty() {
            return;
        }
        p.rendered
            .forget_owner_bodies(None::<std::iter::Empty<&Pubkey>>, &[]);
        let unapplied = p.view.apply_confirmed(changes);
        self.read_back(unapplied);
    }

    /// A tick's overlay moves, in their order (after the confirmed engine
    /// took the tick's changes: a retraction restores what it holds). Says
    /// whether a move rolled writes back.
    pub(super) fn apply_processed_overlay(&mut self, overlay: Vec<OverlayChange>) -> bool {
        let Some(p) = &mut self.processed else {
            return false;
        };
        if overlay.is_empty() {
            return false;
        }
        p.rendered
            .forget_owner_bodies(None::<std::iter::Empty<&Pubkey>>, &[]);
        let mut unapplied = Unapplied::default();
        let (mut set, mut retracted, mut rolled_back) = (Vec::new(), Vec::new(), false);
        let mut moves = overlay.into_iter().peekable();
        while let Some(change) = moves.next() {
            match change {
                OverlayChange::Set(write) => set.push(*write),
                OverlayChange::Retract {
                    account,
                    rolled_back: back,
                } => {
                    retracted.push(account);
                    rolled_back |= back;
                }
            }
            // A run of retractions, then its sets, at a time.
            let run_ends = match moves.peek() {
                None => true,
                Some(OverlayChange::Retract { .. }) => !set.is_empty(),
                Some(OverlayChange::Set(_)) => false,
            };
            if run_ends {
                let more = p
                    .view
                    .apply_overlay(std::mem::take(&mut set), &retracted, &self.engine);
                retracted.clear();
                unapplied.owners.extend(more.owners);
                unapplied.pools.extend(more.pools);
            }
        }
        self.read_back(unapplied);
        rolled_back
    }

    /// Owners an engine could not answer for are read from the database
    /// into both.
    fn read_back(&mut self, Unapplied { owners, pools }: Unapplied) {
        if !owners.is_empty() || !pools.is_empty() {
            self.reads.read_back(owners, pools);
        }
    }

    /// After tick `tick`: the processed engine's events to its feed.
    pub(super) fn publish_processed(&mut self, tick: u64, rolled_back: bool) {
        let Some(p) = &mut self.processed else {
            return;
        };
        p.refresh_rendered();
        let mut events = p.view.engine_mut().take_events();
        let engine = p.view.engine();
        events.retain(|e| {
            matches!(e, FeedEvent::Stop(..) | FeedEvent::Gone(..)) || engine.holds(&e.owner())
        });
        if p.feed.publish(engine, tick, events, rolled_back) == Published::TooMany {
            let epoch = p.feed.epoch();
            p.view.engine_mut().take_events();
            p.feed.restart(epoch, tick, true);
        }
    }

    /// A load: the processed engine filled as the confirmed one, the overlay
    /// laid over, and its feed started over at the load's tick.
    pub(super) fn load_processed(
        &mut self,
        pools: &[PoolState],
        owners: &Owners,
        overlay: Vec<OverlayWrite>,
        (epoch, tick, close): (u64, u64, bool),
    ) {
        let Some(p) = &mut self.processed else {
            return;
        };
        let engine = p.view.engine_mut();
        engine.clear();
        for pool in pools {
            engine.upsert_pool(pool.clone());
        }
        for (owner, (positions, _)) in owners {
            engine.set_owner(*owner, positions.clone());
        }
        engine.end_reload();
        p.view.reset_overlay();
        p.view.apply_overlay(overlay, &[], &self.engine);
        p.view.engine_mut().take_events();
        p.rendered
            .forget_owner_bodies(None::<std::iter::Empty<&Pubkey>>, &[]);
        p.refresh_rendered();
        p.feed.restart(processed_epoch(epoch), tick, close);
    }

    /// Owners read back from the database (evicted, or unknown to the
    /// processed view): set as stored, the overlay laid over them again.
    pub(super) fn read_back_processed(&mut self, owners: &Owners) {
        let Some(p) = &mut self.processed else {
            return;
        };
        let keys: Vec<Pubkey> = owners.keys().copied().collect();
        let unique: HashSet<&Pubkey> = keys.iter().collect();
        p.rendered
            .forget_owner_bodies(Some(unique.into_iter()), &ALL_BODIES);
        for (owner, (positions, _)) in owners {
            p.view.engine_mut().set_owner(*owner, positions.clone());
        }
        p.view.relay(&keys);
    }
}
