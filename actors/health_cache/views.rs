//! The views of this replica (docs/design.md §15, §17): `confirmed` always,
//! `processed` on a cluster reading the chain at processed, and each of them
//! at the feeds' prices where feeds are read. `Views` is the
//! one place a read's view key chooses one, and the pipeline hands each tick
//! to every view through it; it knows whether the index is loaded and the
//! last tick of the change log its views hold.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::watch;

use super::stream_hub::{Published, StreamHub};
use super::view::{Book, View};
use crate::domain::forks::Commitment;
use crate::domain::pubkey::Pubkey;
use crate::domain::view_key::{Oracle, ViewKey};
use crate::engine::oracle::{FeedReading, OracleFeeds};
use crate::engine::processed::{OverlayWrite, Processed};
use crate::engine::{Change, Engine, PoolState, Unapplied};
use crate::error::{ActorError, ActorResult};
use crate::settings::CacheConfig;
use lendex_store::change_log::Tick;
use lendex_store::engine_rows::Owners;
use lendex_store::overlay::OverlayChange;

/// The feed accounts the index's pools name, as the chain work follows
/// them (docs/design.md §17).
pub type NamedFeeds = watch::Sender<Arc<BTreeSet<Pubkey>>>;

/// A view's feed epoch, from the database's: the same on every replica,
/// never another view's (a confirmed feed's are milliseconds, below 2^48),
/// so an id resumed on another view gets `reset`.
fn view_epoch(epoch: u64, view: ViewKey) -> u64 {
    let commitment = match view.commitment {
        Commitment::Confirmed => 0,
        Commitment::Processed => 1 << 48,
    };
    let oracle = match view.oracle {
        Oracle::Pool => 0,
        Oracle::Feed => 1 << 49,
    };
    epoch | commitment | oracle
}

/// The confirmed view at the feeds' prices: its engine is given each pool
/// as `OracleFeeds` values it, and every other change as it comes.
struct AtFeeds {
    view: View,
    feeds: OracleFeeds,
    /// Where the set of feeds followed is told to the chain work.
    named: NamedFeeds,
    /// Since when each pool's feed has differed from its copy (the crank
    /// lag, on /metrics).
    ahead_since: HashMap<Pubkey, Instant>,
}

impl AtFeeds {
    /// A tick's changes as this view applies them (`OracleFeeds::translate`),
    /// the crank lag timed.
    fn translate(&mut self, changes: &[Change]) -> Vec<Change> {
        for change in changes {
            if let Change::PoolRemoved(pool) = change {
                self.ahead_since.remove(pool);
            }
        }
        let translated = self.feeds.translate(changes);
        for _ in 0..translated.feed_updates {
            crate::metrics::feed_updated();
        }
        // The pools this tick moved, and those whose copy it moved.
        let touched: HashSet<Pubkey> = (translated.changes.iter())
            .filter_map(|c| match c {
                Change::Pool(state) => Some(state.address),
                _ => None,
            })
            .collect();
        let copied: HashSet<Pubkey> = (changes.iter())
            .filter_map(|c| match c {
                Change::Pool(state) => Some(state.address),
                _ => None,
            })
            .collect();
        self.time_cranks(&touched, &copied);
        translated.changes
    }

    /// After a tick: notes when a pool starts to differ from its feed, and
    /// the crank lag when it stops with its copy moved in the tick (a crank
    /// and the feed it copies often land in one slot). A feed that stops
    /// being usable, or comes back to the copy, ends the interval unmeasured.
    fn time_cranks(&mut self, touched: &HashSet<Pubkey>, copied: &HashSet<Pubkey>) {
        for pool in touched {
            match (self.feeds.crank(pool), self.ahead_since.get(pool)) {
                (true, None) => {
                    self.ahead_since.insert(*pool, Instant::now());
                }
                (false, Some(since)) => {
                    if copied.contains(pool) {
                        crate::metrics::crank_landed(since.elapsed());
                    }
                    self.ahead_since.remove(pool);
                }
                _ => {}
            }
        }
    }

    /// Tells the chain work the feeds the pools name, when they changed.
    fn tell_named(&self) {
        let named: BTreeSet<Pubkey> = self.feeds.feeds().into_iter().collect();
        self.named.send_if_modified(|held| {
            let changed = **held != named;
            if changed {
                *held = Arc::new(named);
            }
            changed
        });
    }

    /// A load: the readings first, then each pool at its feed's price.
    fn load(&mut self, pools: &[PoolState], readings: &[(Pubkey, FeedReading)]) {
        self.feeds = OracleFeeds::default();
        for (feed, reading) in readings {
            self.feeds.reading(feed, *reading);
        }
        let priced: Vec<PoolState> = (pools.iter())
            .map(|p| self.feeds.restore_copy(p.clone()))
            .collect();
        self.view.load(&priced);
        self.tell_named();
    }
}

pub(super) struct Views {
    confirmed: View,
    /// The processed views (at the pools' copies, then at the feeds'
    /// prices), on a cluster reading the chain at processed.
    processed: Vec<View>,
    /// Where feeds are read (`[oracle] feeds`).
    at_feeds: Option<AtFeeds>,
    /// A load has filled them: until then reads answer 503.
    loaded: bool,
    /// The last tick of the change log they hold.
    applied: u64,
}

impl Views {
    /// Every replica keeps its numbering and replay window whether or not
    /// anyone is subscribed (docs/design.md §13): the engines keep events.
    /// `named` given, feeds are read and valued.
    pub(super) fn new(
        cache: &CacheConfig,
        max_oracle_age: i64,
        processed: bool,
        named: Option<NamedFeeds>,
    ) -> Views {
        let feed = || {
            StreamHub::new(
                cache.replay_bytes,
                cache.subscriber_max_lag_bytes,
                max_oracle_age,
            )
        };
        let mut engine = Engine::new(cache.max_owners);
        engine.record_events(true);
        let at_feeds = named.map(|named| {
            let mut engine = Engine::at_feeds(cache.max_owners);
            engine.record_events(true);
            // Its owners hold the confirmed engine's positions while equal.
            engine.note_position_writes();
            AtFeeds {
                view: View::new(Book::Confirmed(engine), feed()),
                feeds: OracleFeeds::default(),
                named,
                ahead_since: HashMap::new(),
            }
        });
        Views {
            confirmed: View::new(Book::Confirmed(engine), feed()),
            processed: match (processed, at_feeds.is_some()) {
                (false, _) => Vec::new(),
                (true, at_feeds) => std::iter::once(Processed::new(cache.max_owners))
                    .chain(at_feeds.then(|| Processed::at_feeds(cache.max_owners)))
                    .map(|p| View::new(Book::Processed(p), feed()))
                    .collect(),
            },
            at_feeds,
            loaded: false,
            applied: 0,
        }
    }

    /// Whether a load has filled the views.
    pub(super) fn is_loaded(&self) -> bool {
        self.loaded
    }

    /// The last tick of the change log the views hold.
    pub(super) fn applied(&self) -> u64 {
        self.applied
    }

    /// The view a read asks for: the one place a view key chooses.
    pub(super) fn get(&self, key: ViewKey) -> ActorResult<&View> {
        match (key.commitment, key.oracle) {
            (Commitment::Confirmed, Oracle::Pool) => Some(&self.confirmed),
            (Commitment::Confirmed, Oracle::Feed) => self.at_feeds.as_ref().map(|f| &f.view),
            (Commitment::Processed, _) => {
                (self.processed.iter()).find(|v| v.engine().view_key() == key)
            }
        }
        .ok_or_else(|| not_served(key))
    }

    pub(super) fn get_mut(&mut self, key: ViewKey) -> ActorResult<&mut View> {
        match (key.commitment, key.oracle) {
            (Commitment::Confirmed, Oracle::Pool) => Some(&mut self.confirmed),
            (Commitment::Confirmed, Oracle::Feed) => self.at_feeds.as_mut().map(|f| &mut f.view),
            (Commitment::Processed, _) => {
                (self.processed.iter_mut()).find(|v| v.engine().view_key() == key)
            }
        }
        .ok_or_else(|| not_served(key))
    }

    /// The feed view's readings, where feeds are read (the pools status).
    pub(super) fn oracle_feeds(&self) -> Option<&OracleFeeds> {
        self.at_feeds.as_ref().map(|f| &f.feeds)
    }

    /// Whether the processed view is served (the overlay's moves are read).
    pub(super) fn serves_processed(&self) -> bool {
        !self.processed.is_empty()
    }

    /// The confirmed view: what the write-back, history, the risk lens and
    /// the pool status read.
    pub(super) fn confirmed(&self) -> &View {
        &self.confirmed
    }

    pub(super) fn confirmed_engine_mut(&mut self) -> &mut Engine {
        self.confirmed.engine_mut()
    }

    /// Every view.
    pub(super) fn iter(&self) -> impl Iterator<Item = &View> {
        std::iter::once(&self.confirmed)
            .chain(&self.processed)
            .chain(self.at_feeds.as_ref().map(|f| &f.view))
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut View> {
        std::iter::once(&mut self.confirmed)
            .chain(&mut self.processed)
            .chain(self.at_feeds.as_mut().map(|f| &mut f.view))
    }

    /// A tick in every view, the confirmed one first: its events are
    /// numbered and sent before the other views take the tick (the default
    /// view's readers wait on none of their work; docs/design.md §17). Then
    /// the processed views (the tick's changes where their overlay does not
    /// hold newer, then its overlay moves) and the feed view (its
    /// translation), and their events. Returns what an engine could not
    /// apply from memory (to be read back) and when the confirmed feed
    /// published events, if it did.
    pub(super) fn apply_tick(&mut self, tick: Tick) -> (Unapplied, Option<Instant>) {
        let Tick {
            tick,
            changes,
            overlay,
        } = tick;
        let others = !self.processed.is_empty() || self.at_feeds.is_some();
        let (mine, changes) = match others {
            true => (changes.clone(), changes),
            false => (changes, Vec::new()),
        };
        let owners: Option<HashSet<Pubkey>> = (!mine.iter().any(Change::is_pool_wide))
            .then(|| mine.iter().filter_map(Change::owner).collect());
        self.confirmed
            .forget_bodies(owners.as_ref().map(|o| o.iter()));
        let mut unapplied = self.confirmed.engine_mut().apply(mine);
        let published =
            (self.confirmed.publish(tick, false) == Published::Events).then(Instant::now);
        if others {
            let more = self.apply_elsewhere(&changes);
            unapplied.owners.extend(more.owners);
            unapplied.pools.extend(more.pools);
        }
        let (more, rolled_back) = self.apply_overlay(overlay);
        unapplied.owners.extend(more.owners);
        unapplied.pools.extend(more.pools);
        for p in &mut self.processed {
            p.publish(tick, rolled_back);
        }
        if let Some(f) = &mut self.at_feeds {
            f.view.publish(tick, false);
        }
        (unapplied, published)
    }

    /// A tick's confirmed changes in the processed views (each keeps what
    /// its overlay holds newer, and settles what the tick ended to what the
    /// confirmed engine holds after it) and in the feed view (translated).
    fn apply_elsewhere(&mut self, changes: &[Change]) -> Unapplied {
        let mut unapplied = Unapplied::default();
        if changes.is_empty() {
            return unapplied;
        }
        let confirmed = self.confirmed.engine();
        for view in &mut self.processed {
            // Any confirmed change may end an overlaid write: all its bodies go.
            view.forget_bodies(None::<std::iter::Empty<&Pubkey>>);
            if let Some(p) = view.processed_mut() {
                let applied = p.apply_confirmed(changes, confirmed);
                for more in [applied, p.settle_confirmed(confirmed)] {
                    unapplied.owners.extend(more.owners);
                    unapplied.pools.extend(more.pools);
                }
            }
        }
        if let Some(f) = &mut self.at_feeds {
            let translated = f.translate(changes);
            // A feed's reading moves its pools here: every body of theirs goes.
            let moved: Option<HashSet<Pubkey>> = (!translated.iter().any(Change::is_pool_wide))
                .then(|| translated.iter().filter_map(Change::owner).collect());
            f.view.forget_bodies(moved.as_ref().map(|o| o.iter()));
            let engine = f.view.engine_mut();
            // The confirmed engine took the same tick: where a pool is at
            // its copy, its members' scores are taken from there.
            let more = engine.apply_beside(translated, confirmed);
            engine.share_positions(confirmed);
            // Its health factors are not the index's to store.
            engine.take_dirty();
            unapplied.owners.extend(more.owners);
            unapplied.pools.extend(more.pools);
            if changes
                .iter()
                .any(|c| matches!(c, Change::Pool(_) | Change::PoolRemoved(_)))
            {
                f.tell_named();
            }
        }
        unapplied
    }

    /// A tick's overlay moves, in their order, in the processed views (after
    /// the confirmed engine took the tick's changes: a retraction restores
    /// what it holds). Says whether a move rolled writes back.
    fn apply_overlay(&mut self, overlay: Vec<OverlayChange>) -> (Unapplied, bool) {
        let mut unapplied = Unapplied::default();
        if self.processed.is_empty() || overlay.is_empty() {
            return (unapplied, false);
        }
        // A run of retractions, then its sets, at a time.
        let (mut runs, mut rolled_back) = (Vec::new(), false);
        let (mut set, mut retracted) = (Vec::new(), Vec::new());
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
            let run_ends = match moves.peek() {
                None => true,
                Some(OverlayChange::Retract { .. }) => !set.is_empty(),
                Some(OverlayChange::Set(_)) => false,
            };
            if run_ends {
                runs.push((std::mem::take(&mut set), std::mem::take(&mut retracted)));
            }
        }
        let confirmed = self.confirmed.engine();
        for view in &mut self.processed {
            view.forget_bodies(None::<std::iter::Empty<&Pubkey>>);
            let Some(p) = view.processed_mut() else {
                continue;
            };
            for (set, retracted) in &runs {
                let more = p.apply_overlay(set.clone(), retracted, confirmed);
                unapplied.owners.extend(more.owners);
                unapplied.pools.extend(more.pools);
            }
        }
        (unapplied, rolled_back)
    }

    /// Every view's streams start over at `tick` of the database's `epoch`
    /// (a load): what led there is not numbered, and with `close` open
    /// streams end.
    pub(super) fn restart(&mut self, epoch: u64, tick: u64, close: bool) {
        self.applied = tick;
        for view in self.iter_mut() {
            let key = view.engine().view_key();
            view.restart(view_epoch(epoch, key), tick, close);
        }
    }

    /// Ticks up to `tick` were applied, in every view.
    pub(super) fn advance_to(&mut self, tick: u64) {
        self.applied = self.applied.max(tick);
        let applied = self.applied;
        for view in self.iter_mut() {
            view.streams_mut().advance_to(applied);
        }
    }

    /// Answers the parked reconnects that can be (after log read `number`
    /// when `read_log`), in every view.
    pub(super) fn unpark(&mut self, read_log: bool, number: u64) {
        let applied = self.applied;
        for view in self.iter_mut() {
            view.unpark(read_log, number, applied);
        }
    }

    /// A load: every view emptied and filled with `pools` (the feed views'
    /// at `readings`) and `owners` (the stored health factors kept by the
    /// confirmed engine), the overlay laid over the processed ones.
    pub(super) fn load(
        &mut self,
        pools: &[PoolState],
        readings: &[(Pubkey, FeedReading)],
        owners: Owners,
        overlay: Vec<OverlayWrite>,
    ) {
        for view in self.iter_mut() {
            view.forget_bodies(None::<std::iter::Empty<&Pubkey>>);
        }
        // The readings first: history records the feed price of each pool
        // as it is set.
        self.confirmed.engine_mut().load_feed_readings(readings);
        self.confirmed.load(pools);
        for p in self.processed.iter_mut().filter_map(View::processed_mut) {
            p.load(pools, readings);
        }
        if let Some(f) = &mut self.at_feeds {
            f.load(pools, readings);
        }
        self.set_owners(owners, false);
        let confirmed = self.confirmed.engine();
        for p in self.processed.iter_mut().filter_map(View::processed_mut) {
            p.engine_mut().end_reload();
            p.apply_overlay(overlay.clone(), &[], confirmed);
        }
        if let Some(f) = &mut self.at_feeds {
            let engine = f.view.engine_mut();
            engine.end_reload();
            engine.take_dirty();
        }
        self.confirmed.engine_mut().end_reload();
        self.loaded = true;
    }

    /// Owners read back from the database (evicted, or unknown to the
    /// processed view): set as stored in every view, the overlay laid over
    /// them again.
    pub(super) fn read_back(&mut self, owners: Owners) {
        for view in self.iter() {
            view.forget_bodies(Some(owners.keys()));
        }
        self.set_owners(owners, true);
    }

    /// `owners` as stored, in every view; with `relay`, the overlay's
    /// writes of theirs laid over them again (a load lays the whole overlay).
    fn set_owners(&mut self, owners: Owners, relay: bool) {
        let keys: Vec<Pubkey> = match relay {
            true => owners.keys().copied().collect(),
            false => Vec::new(),
        };
        // Every other view holds the confirmed engine's lists while equal.
        let mut others: Vec<&mut Engine> = (self.processed.iter_mut())
            .filter_map(View::processed_mut)
            .map(Processed::engine_mut)
            .chain(self.at_feeds.as_mut().map(|f| f.view.engine_mut()))
            .collect();
        let engine = self.confirmed.engine_mut();
        for (owner, (positions, stored)) in owners {
            for other in &mut others {
                other.set_owner(owner, positions.clone());
            }
            engine.set_owner(owner, positions);
            if let Some(stored) = stored {
                engine.set_stored(&owner, stored);
            }
            // Owner by owner, so each copy made for another view is freed
            // before the next is made (a load holds one list per owner).
            for other in &mut others {
                other.share_positions(engine);
            }
        }
        // Their health factors are not the index's to store.
        for other in others {
            other.take_dirty();
        }
        if relay {
            for p in self.processed.iter_mut().filter_map(View::processed_mut) {
                p.relay(&keys);
            }
        }
    }
}

fn not_served(key: ViewKey) -> ActorError {
    ActorError::internal(format!(
        "the {} view at the {} price is not served here",
        key.commitment.name(),
        key.oracle.name()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_view_has_an_epoch_of_its_own() {
        let epoch = 1_700_000_000_000;
        let keys = [
            ViewKey::new(Commitment::Confirmed, Oracle::Pool),
            ViewKey::new(Commitment::Processed, Oracle::Pool),
            ViewKey::new(Commitment::Confirmed, Oracle::Feed),
            ViewKey::new(Commitment::Processed, Oracle::Feed),
        ];
        let epochs: BTreeSet<u64> = keys.iter().map(|k| view_epoch(epoch, *k)).collect();
        assert_eq!(epochs.len(), 4);
        assert_eq!(view_epoch(epoch, ViewKey::CONFIRMED), epoch);
    }

    /// The other views hold the confirmed view's position lists, after a
    /// load and after a tick that moves an owner, not copies of them.
    #[test]
    fn every_view_shares_the_confirmed_views_positions() {
        use crate::engine::sample::{POOLS, owner_key, pool_state, position};
        let cache = CacheConfig {
            max_owners: 1_000,
            subscriber_max_lag_bytes: 1 << 20,
            replay_bytes: 1 << 20,
            change_log_seconds: 60,
        };
        let (named, _) = watch::channel(Arc::default());
        let mut views = Views::new(&cache, 60, true, Some(named));
        let others = [
            ViewKey::new(Commitment::Confirmed, Oracle::Feed),
            ViewKey::new(Commitment::Processed, Oracle::Pool),
            ViewKey::new(Commitment::Processed, Oracle::Feed),
        ];
        let pools: Vec<PoolState> = (0..POOLS).map(|i| pool_state(i, Some(1_000_000))).collect();
        let owners: Owners = (0..8u8)
            .map(|o| (owner_key(o), (vec![position(o, 0, 1_000, 900, 1)], None)))
            .collect();
        views.load(&pools, &[], owners, Vec::new());
        let shared = |views: &Views| {
            (others.iter())
                .map(|key| {
                    views
                        .get(*key)
                        .expect("served")
                        .engine()
                        .shared_position_lists()
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(shared(&views), [8; 3]);
        let moved = Change::Position {
            owner: owner_key(3),
            position: position(3, 1, 5, 5, 2),
            row_health_factor: 0,
        };
        let tick = |changes| Tick {
            tick: 1,
            changes,
            overlay: Vec::new(),
        };
        views.apply_tick(tick(vec![moved]));
        assert_eq!(shared(&views), [8; 3]);
        let positions = |key: ViewKey| {
            let engine = views.get(key).expect("served").engine();
            engine.peek(&owner_key(3)).map(|v| v.positions.len())
        };
        for key in std::iter::once(ViewKey::CONFIRMED).chain(others) {
            assert_eq!(positions(key), Some(2), "{key:?}");
        }
    }
}
