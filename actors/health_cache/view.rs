//! The views the cache serves (docs/design.md §15): `confirmed` always, and
//! `processed` on a cluster reading the chain at processed. A view owns its
//! engine, its rendered answers and the engine version they were made from,
//! and its feed (numbering, replay window, subscribers). `Views` is the one
//! place a read's commitment chooses one, and the pipeline hands each tick
//! to every view through it; it knows whether the index is loaded and the
//! last tick of the change log its views hold.

use std::collections::HashSet;

use tokio::sync::oneshot;

use super::messages::{Borrows, OwnerPositions, OwnerRow, Subscribe};
use super::stream_hub::{Published, StreamHub};
use crate::domain::forks::Commitment;
use crate::domain::pubkey::Pubkey;
use crate::domain::risk::LiquidationPrice;
use crate::engine::processed::{OverlayWrite, Processed};
use crate::engine::risk::liquidation_prices;
use crate::engine::{Change, Engine, FeedEvent, Held, PoolEntry, PoolState, Unapplied};
use crate::error::{ActorError, ActorResult};
use crate::serve::poll_answers::{Body, OwnerBody, SharedRendered};
use crate::serve::render::{self, Answer};
use crate::serve::subscriber::FeedStream;
use crate::settings::CacheConfig;
use lendex_store::engine_rows::Owners;
use lendex_store::overlay::OverlayChange;

const ALL_BODIES: [OwnerBody; 2] = [OwnerBody::Positions, OwnerBody::Detail];

/// The processed feed's epoch, from the database's: never one a confirmed
/// feed has (those are milliseconds, below 2^48), the same on every replica.
pub(super) fn processed_epoch(epoch: u64) -> u64 {
    epoch | 1 << 48
}

/// The engine a view keeps: the confirmed rows, or those with the overlay
/// of processed writes laid over them (`engine::processed`).
enum Book {
    Confirmed(Engine),
    Processed(Processed),
}

/// One view: what it answers from, what it has rendered, what it streams.
pub(super) struct View {
    book: Book,
    rendered: SharedRendered,
    /// The engine version the rendered answers were made from.
    rendered_version: u64,
    streams: StreamHub,
}

impl View {
    fn new(book: Book, streams: StreamHub) -> View {
        View {
            book,
            rendered: SharedRendered::default(),
            rendered_version: 0,
            streams,
        }
    }

    pub(super) fn engine(&self) -> &Engine {
        match &self.book {
            Book::Confirmed(engine) => engine,
            Book::Processed(p) => p.engine(),
        }
    }

    pub(super) fn engine_mut(&mut self) -> &mut Engine {
        match &mut self.book {
            Book::Confirmed(engine) => engine,
            Book::Processed(p) => p.engine_mut(),
        }
    }

    pub(super) fn rendered(&self) -> &SharedRendered {
        &self.rendered
    }

    pub(super) fn streams(&self) -> &StreamHub {
        &self.streams
    }

    pub(super) fn streams_mut(&mut self) -> &mut StreamHub {
        &mut self.streams
    }

    /// Drops the rendered answers the engine's changes made stale.
    fn refresh_rendered(&mut self) {
        let version = self.engine().version();
        if version != self.rendered_version {
            self.rendered_version = version;
            self.rendered.forget_answers();
        }
    }

    /// Drops the owner bodies of `owners` (every one when None).
    pub(super) fn forget_bodies<'a>(&self, owners: Option<impl Iterator<Item = &'a Pubkey>>) {
        match owners {
            Some(owners) => self.rendered.forget_owner_bodies(Some(owners), &ALL_BODIES),
            None => self
                .rendered
                .forget_owner_bodies(None::<std::iter::Empty<&Pubkey>>, &[]),
        }
    }

    /// Drops the detail bodies of `owners` (their borrows changed).
    pub(super) fn forget_details(&self, owners: &[Pubkey]) {
        self.rendered
            .forget_owner_bodies(Some(owners.iter()), &[OwnerBody::Detail]);
    }

    /// A rendered-answer miss: rendered now and kept for other readers.
    pub(super) fn render(&self, answer: Answer, now: i64, max_oracle_age: i64) -> Body {
        if let Some(body) = self.rendered.answer(&answer, now) {
            return body;
        }
        let body = Body::new(render::answer(self.engine(), &answer, now, max_oracle_age));
        self.rendered.keep_answer(answer, now, body.clone());
        body
    }

    /// After tick `tick` was applied: its feed events numbered and sent;
    /// `rolled_back` marks them (docs/design.md §15). A tick with more
    /// events than ids starts the feed over at it.
    /// An owner's positions as this view holds them (the owner known to its
    /// engine), with the wallet's recent borrows as the cache holds them.
    pub(super) fn owner_positions(
        &mut self,
        owner: &Pubkey,
        (borrows, borrow_generation): (Option<Borrows>, u64),
    ) -> OwnerPositions {
        let body_generation = self.rendered.owner_generation();
        let (health_factor, rows) = match self.engine_mut().view(owner) {
            None => (u128::MAX, Vec::new()),
            Some(view) => (
                view.health_factor,
                view.positions
                    .iter()
                    .zip(liquidation_prices(&view))
                    .map(|((p, pool), lp)| owner_row(p, pool, lp))
                    .collect(),
            ),
        };
        OwnerPositions {
            health_factor,
            rows,
            borrows,
            borrow_generation,
            body_generation,
        }
    }

    fn publish(&mut self, tick: u64, rolled_back: bool) -> Published {
        self.refresh_rendered();
        let mut events = self.engine_mut().take_events();
        // A start or update of an owner gone in the same tick has nothing to
        // show (its stop follows): no number is spent on it.
        let engine = self.engine();
        events.retain(|e| {
            matches!(e, FeedEvent::Stop(..) | FeedEvent::Gone(..)) || engine.holds(&e.owner())
        });
        let published = match &self.book {
            Book::Confirmed(engine) => self.streams.publish(engine, tick, events, rolled_back),
            Book::Processed(p) => self.streams.publish(p.engine(), tick, events, rolled_back),
        };
        if published == Published::TooMany {
            let epoch = self.streams.epoch();
            self.restart(epoch, tick, true);
        }
        published
    }

    /// The feed starts over at `tick` of feed `epoch` (a load, or a tick too
    /// large to number): what led there is not numbered, and with `close`
    /// open streams end.
    fn restart(&mut self, epoch: u64, tick: u64, close: bool) {
        self.engine_mut().take_events();
        self.refresh_rendered();
        self.streams.restart(epoch, tick, close);
    }

    /// A new stream; true when it was parked to wait for a change not
    /// applied here yet (`StreamHub::subscribe`).
    pub(super) fn subscribe(
        &mut self,
        msg: Subscribe,
        reads_started: u64,
        reply: oneshot::Sender<ActorResult<FeedStream>>,
    ) -> bool {
        match &self.book {
            Book::Confirmed(engine) => self.streams.subscribe(engine, msg, reads_started, reply),
            Book::Processed(p) => self
                .streams
                .subscribe(p.engine(), msg, reads_started, reply),
        }
    }

    /// Answers the parked reconnects that can be (`StreamHub::unpark`).
    fn unpark(&mut self, read_log: bool, number: u64, applied: u64) {
        match &self.book {
            Book::Confirmed(engine) => self.streams.unpark(engine, read_log, number, applied),
            Book::Processed(p) => self.streams.unpark(p.engine(), read_log, number, applied),
        }
    }

    /// Emptied, and every pool as loaded (the owners follow: `Views::load`).
    fn load(&mut self, pools: &[PoolState]) {
        let engine = self.engine_mut();
        engine.clear();
        for pool in pools {
            engine.upsert_pool(pool.clone());
        }
    }
}

fn owner_row(
    position: &Held,
    pool: &PoolEntry,
    liquidation_price: Option<(LiquidationPrice, i32)>,
) -> OwnerRow {
    OwnerRow {
        position: position.state(pool.state.address),
        symbol: pool.state.symbol.clone(),
        deposit_index_wad: pool.state.pricing.deposit_index_wad,
        borrow_index_wad: pool.state.pricing.borrow_index_wad,
        supply_apy: pool.supply_apy,
        borrow_apy: pool.borrow_apy,
        liquidation_price,
    }
}

/// The views of this replica.
pub(super) struct Views {
    confirmed: View,
    processed: Option<View>,
    /// A load has filled them: until then reads answer 503.
    loaded: bool,
    /// The last tick of the change log they hold.
    applied: u64,
}

impl Views {
    /// Every replica keeps its numbering and replay window whether or not
    /// anyone is subscribed (docs/design.md §13): the engines keep events.
    pub(super) fn new(cache: &CacheConfig, max_oracle_age: i64, processed: bool) -> Views {
        let feed = || {
            StreamHub::new(
                cache.replay_bytes,
                cache.subscriber_max_lag_bytes,
                max_oracle_age,
            )
        };
        let mut engine = Engine::new(cache.max_owners);
        engine.record_events(true);
        Views {
            confirmed: View::new(Book::Confirmed(engine), feed()),
            processed: processed
                .then(|| View::new(Book::Processed(Processed::new(cache.max_owners)), feed())),
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

    /// The view a read asks for: the one place a commitment chooses.
    pub(super) fn get(&self, view: Commitment) -> ActorResult<&View> {
        match (view, &self.processed) {
            (Commitment::Confirmed, _) => Ok(&self.confirmed),
            (Commitment::Processed, Some(p)) => Ok(p),
            (Commitment::Processed, None) => Err(not_served()),
        }
    }

    pub(super) fn get_mut(&mut self, view: Commitment) -> ActorResult<&mut View> {
        match (view, &mut self.processed) {
            (Commitment::Confirmed, _) => Ok(&mut self.confirmed),
            (Commitment::Processed, Some(p)) => Ok(p),
            (Commitment::Processed, None) => Err(not_served()),
        }
    }

    /// The confirmed view: what the write-back, history, the risk lens and
    /// the pool status read.
    pub(super) fn confirmed(&self) -> &View {
        &self.confirmed
    }

    pub(super) fn confirmed_engine_mut(&mut self) -> &mut Engine {
        self.confirmed.engine_mut()
    }

    pub(super) fn serves_processed(&self) -> bool {
        self.processed.is_some()
    }

    /// Every view.
    pub(super) fn iter(&self) -> impl Iterator<Item = &View> {
        std::iter::once(&self.confirmed).chain(&self.processed)
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut View> {
        std::iter::once(&mut self.confirmed).chain(&mut self.processed)
    }

    /// A tick's confirmed changes, in every view: the owner bodies they make
    /// stale dropped, the processed view given them first (it keeps what
    /// its overlay does not hold newer), the confirmed engine taking them.
    /// What an engine could not apply from memory is to be read back.
    pub(super) fn apply_changes(&mut self, changes: Vec<Change>) -> Unapplied {
        let mut unapplied = Unapplied::default();
        if let Some(view) = &mut self.processed
            && !changes.is_empty()
        {
            // Any confirmed change may end an overlaid write: all its bodies go.
            view.forget_bodies(None::<std::iter::Empty<&Pubkey>>);
            if let Book::Processed(p) = &mut view.book {
                unapplied = p.apply_confirmed(&changes);
            }
        }
        let owners: Option<HashSet<Pubkey>> = (!changes.iter().any(Change::is_pool_wide))
            .then(|| changes.iter().filter_map(Change::owner).collect());
        self.confirmed
            .forget_bodies(owners.as_ref().map(|o| o.iter()));
        let more = self.confirmed.engine_mut().apply(changes);
        unapplied.owners.extend(more.owners);
        unapplied.pools.extend(more.pools);
        unapplied
    }

    /// A tick's overlay moves, in their order, in the processed view (after
    /// the confirmed engine took the tick's changes: a retraction restores
    /// what it holds). Says whether a move rolled writes back.
    pub(super) fn apply_overlay(&mut self, overlay: Vec<OverlayChange>) -> (Unapplied, bool) {
        let mut unapplied = Unapplied::default();
        let Some(view) = &mut self.processed else {
            return (unapplied, false);
        };
        if overlay.is_empty() {
            return (unapplied, false);
        }
        view.forget_bodies(None::<std::iter::Empty<&Pubkey>>);
        let Book::Processed(p) = &mut view.book else {
            return (unapplied, false);
        };
        let confirmed = self.confirmed.engine();
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
                let more = p.apply_overlay(std::mem::take(&mut set), &retracted, confirmed);
                retracted.clear();
                unapplied.owners.extend(more.owners);
                unapplied.pools.extend(more.pools);
            }
        }
        (unapplied, rolled_back)
    }

    /// After tick `tick`: each view's events to its feed (the processed
    /// ones marked when the tick rolled writes back). True when the
    /// confirmed feed published some.
    pub(super) fn publish(&mut self, tick: u64, rolled_back: bool) -> bool {
        let published = self.confirmed.publish(tick, false) == Published::Events;
        if let Some(p) = &mut self.processed {
            p.publish(tick, rolled_back);
        }
        published
    }

    /// Every view's streams start over at `tick` of the database's `epoch`
    /// (a load): what led there is not numbered, and with `close` open
    /// streams end.
    pub(super) fn restart(&mut self, epoch: u64, tick: u64, close: bool) {
        self.applied = tick;
        self.confirmed.restart(epoch, tick, close);
        if let Some(p) = &mut self.processed {
            p.restart(processed_epoch(epoch), tick, close);
        }
    }

    /// Ticks up to `tick` were applied, in every view.
    pub(super) fn advance_to(&mut self, tick: u64) {
        self.applied = self.applied.max(tick);
        let applied = self.applied;
        for view in self.iter_mut() {
            view.streams.advance_to(applied);
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

    /// A load: every view emptied and filled with `pools` and `owners` (the
    /// stored health factors kept by the confirmed engine), the overlay laid
    /// over the processed one.
    pub(super) fn load(&mut self, pools: &[PoolState], owners: Owners, overlay: Vec<OverlayWrite>) {
        for view in self.iter_mut() {
            view.forget_bodies(None::<std::iter::Empty<&Pubkey>>);
            view.load(pools);
        }
        self.set_owners(owners, false);
        let confirmed = self.confirmed.engine();
        if let Some(Book::Processed(p)) = self.processed.as_mut().map(|v| &mut v.book) {
            p.engine_mut().end_reload();
            p.reset_overlay();
            p.apply_overlay(overlay, &[], confirmed);
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
        if let Some(Book::Processed(p)) = self.processed.as_mut().map(|v| &mut v.book) {
            for (owner, (positions, _)) in &owners {
                p.engine_mut().set_owner(*owner, positions.clone());
            }
            if relay {
                let keys: Vec<Pubkey> = owners.keys().copied().collect();
                p.relay(&keys);
            }
        }
        let engine = self.confirmed.engine_mut();
        for (owner, (positions, stored)) in owners {
            engine.set_owner(owner, positions);
            if let Some(stored) = stored {
                engine.set_stored(&owner, stored);
            }
        }
    }
}

fn not_served() -> ActorError {
    ActorError::internal("the processed view is not served here")
}
