//! One view the cache serves (docs/design.md §15, §17; `views` holds them
//! all). A view owns its engine, its rendered answers and the engine version
//! they were made from, and its feed (numbering, replay window,
//! subscribers).

use tokio::sync::oneshot;

use super::messages::{Borrows, OwnerPositions, OwnerRow, Subscribe};
use super::stream_hub::{Published, StreamHub};
use crate::domain::pubkey::Pubkey;
use crate::domain::risk::LiquidationPrice;
use crate::engine::processed::Processed;
use crate::engine::risk::liquidation_prices;
use crate::engine::{Engine, FeedEvent, Held, PoolEntry, PoolState};
use crate::error::ActorResult;
use crate::serve::poll_answers::{Body, OwnerBody, SharedRendered};
use crate::serve::render::{self, Answer};
use crate::serve::subscriber::FeedStream;

const ALL_BODIES: [OwnerBody; 2] = [OwnerBody::Positions, OwnerBody::Detail];

/// The engine a view keeps: the confirmed rows, or those with the overlay
/// of processed writes laid over them (`engine::processed`).
pub(super) enum Book {
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
    pub(super) fn new(book: Book, streams: StreamHub) -> View {
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

    /// The processed book, on the processed view.
    pub(super) fn processed_mut(&mut self) -> Option<&mut Processed> {
        match &mut self.book {
            Book::Confirmed(_) => None,
            Book::Processed(p) => Some(p),
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

    /// After tick `tick` was applied: its feed events numbered and sent;
    /// `rolled_back` marks them (docs/design.md §15). A tick with more
    /// events than ids starts the feed over at it.
    pub(super) fn publish(&mut self, tick: u64, rolled_back: bool) -> Published {
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
    pub(super) fn restart(&mut self, epoch: u64, tick: u64, close: bool) {
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
    pub(super) fn unpark(&mut self, read_log: bool, number: u64, applied: u64) {
        match &self.book {
            Book::Confirmed(engine) => self.streams.unpark(engine, read_log, number, applied),
            Book::Processed(p) => self.streams.unpark(p.engine(), read_log, number, applied),
        }
    }

    /// Emptied, and every pool as loaded (the owners follow: `Views::load`).
    pub(super) fn load(&mut self, pools: &[PoolState]) {
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
