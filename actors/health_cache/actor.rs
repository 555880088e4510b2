//! The actor around the engine: its state, kept here, and what each message
//! asks of it (`handlers.rs` routes them): the write-back of the engine's
//! health factors to `positions` through the database writer, rendering,
//! how a subscription reaches a view's streams (docs/design.md §11, §13), the
//! answers read from the confirmed engine, and the lease's moves for
//! history (§12). How changes reach the engines (the change log read tick
//! after tick, reloads, evicted owners) is `pipeline.rs`, the one other
//! file that sees its state (the views and the read queue); what each view
//! holds, `view.rs`; history's side, `history.rs`.

use std::time::Duration;

use actix::prelude::*;
use bytes::Bytes;
use deadpool_postgres::Pool;
use tokio::sync::oneshot;

use super::borrow_lists::BorrowLists;
use super::history::{HOLD_AT_MOST, HistoryLink, RETRY_TAKEOVER, TookOver};
use super::listening::Listening;
use super::messages::{
    Borrows, CacheStats, DatabaseNotice, OwnerPositions, RiskQuery, Subscribe, WrittenBack,
};
use super::read_queue::{ReadQueue, Waiter, earliest};
use super::stream_hub::RESUME_WAIT;
use super::views::{NamedFeeds, Views};
use super::webhooks::WebhookLink;
use super::write_back::{Pace, WriteBack};
use crate::db_writer::Writers;
use crate::domain::pubkey::Pubkey;
use crate::domain::view_key::ViewKey;
use crate::engine::Engine;
use crate::engine::pool_status::{Served, pool_feed, pool_status};
use crate::engine::risk::{self, RiskError};
use crate::error::{ActorError, ActorResult};
use crate::serve::poll_answers::{Body, SharedRendered, now_seconds};
use crate::serve::render::{self, Answer};
use crate::serve::subscriber::FeedStream;
use crate::settings::{CacheConfig, HealthConfig};
use lendex_store::listen::{Notice, listen_forever};

/// How often subscribers whose connection closed are let go.
const PRUNE_EVERY: Duration = Duration::from_secs(1);
/// How often the lease holder prunes the change log (to
/// `cache.change_log_seconds`).
const LOG_PRUNE_EVERY: Duration = Duration::from_secs(10);

/// This replica and the cluster's ingester lease. Its holder alone records
/// history and writes the engine's health factors back to `positions`:
/// every replica computes the same values from the same rows, and several
/// writing them raced for the same row locks (deadlocks, retried
/// write-backs) and multiplied the database's work by the replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lease {
    /// Nobody contends for it (no background sync, no history): each
    /// replica writes its own health factors.
    Unused,
    /// This replica holds it.
    Held,
    /// Another replica holds it, or nobody yet: the health factors are
    /// taken as stored by the holder. A sync that waits on its write still
    /// writes.
    Elsewhere,
}

pub struct HealthCache {
    db: Pool,
    writer: Writers,
    database_url: String,
    /// This replica's name in the NOTIFY of its own borrows (see `lendex_store::listen`).
    origin: String,
    cluster: &'static str,
    /// Appended to explorer links of this cluster (GET /api/pools/status).
    explorer_query: String,
    max_oracle_age: i64,
    /// Seconds of the change log kept (the lease holder prunes the rest).
    log_keep_seconds: f64,
    /// The views served, each with its engine, answers and feed, whether
    /// they are loaded and the last tick they hold (`view.rs`).
    pub(super) views: Views,
    /// The reads of the database, one at a time, and who waits on them.
    pub(super) reads: ReadQueue,
    /// The LISTEN connection: up or not, and who waits for it.
    listening: Listening,
    /// When, in what order and at what pace health factors are written back.
    writing: WriteBack,
    /// Recent borrows per wallet (the detail's borrow_txs).
    borrows: BorrowLists,
    /// History's writer and this replica's part in it (None: history is off).
    history: Option<HistoryLink>,
    /// Webhooks' judging of each change (None: not asked for).
    pub(super) webhooks: Option<WebhookLink>,
    /// Whether this replica holds the ingester lease (`LeaderChanged`).
    lease: Lease,
    /// When the last log read published frames (the freshness metrics).
    pub(super) last_publish: Option<std::time::Instant>,
}

/// What the health cache reads of the settings.
pub struct Settings<'a> {
    pub cache: &'a CacheConfig,
    pub health: &'a HealthConfig,
    /// Its own connection LISTENs here (docs/design.md §13).
    pub database_url: &'a str,
    /// The cluster its rows are kept under.
    pub cluster: &'static str,
    /// The explorer links of answers name a custom cluster by it.
    pub rpc_url: &'a str,
    /// The cluster reads the chain at processed: serve that view too.
    pub processed: bool,
    /// Feeds are read (docs/design.md §17): serve the feed view, and tell
    /// the chain work here which feed accounts the pools name.
    pub named_feeds: Option<NamedFeeds>,
}

impl HealthCache {
    /// Reads with `db`, writes health factors through `writer`; `origin` names
    /// this replica's writes (see `lendex_store::listen`); `leased`: the replicas
    /// contend for the ingester lease, and its holder alone writes the
    /// health factors (it says so with `LeaderChanged`); the rest comes from
    /// `settings`.
    pub fn new(
        db: Pool,
        writer: Writers,
        origin: String,
        settings: Settings<'_>,
        history: Option<HistoryLink>,
        leased: bool,
    ) -> Self {
        let Settings {
            cache,
            health,
            database_url,
            cluster,
            rpc_url,
            processed,
            named_feeds,
        } = settings;
        let max_oracle_age = i64::try_from(health.max_oracle_age_seconds).unwrap_or(i64::MAX);
        HealthCache {
            db,
            writer,
            database_url: database_url.to_string(),
            origin,
            cluster,
            explorer_query: crate::wire::pools::explorer_query(cluster, rpc_url),
            max_oracle_age,
            log_keep_seconds: cache.change_log_seconds as f64,
            views: Views::new(cache, max_oracle_age, processed, named_feeds),
            reads: ReadQueue::default(),
            listening: Listening::default(),
            writing: WriteBack::default(),
            borrows: BorrowLists::default(),
            history,
            webhooks: None,
            lease: if leased {
                Lease::Elsewhere
            } else {
                Lease::Unused
            },
            last_publish: None,
        }
    }

    /// Judges every change for webhooks (docs/design.md §18).
    pub fn with_webhooks(mut self, link: WebhookLink) -> Self {
        self.webhooks = Some(link);
        self
    }

    /// The rendered unhealthy answers, for HTTP workers to read directly.
    pub fn rendered(&self) -> SharedRendered {
        self.views.confirmed().rendered().clone()
    }

    /// A view's rendered answers, when it is served.
    pub fn rendered_of(&self, key: ViewKey) -> Option<SharedRendered> {
        let view = self.views.get(key).ok();
        view.map(|view| view.rendered().clone())
    }

    /// The database and the cluster the pipeline's reads are of.
    pub(super) fn source(&self) -> (Pool, &'static str) {
        (self.db.clone(), self.cluster)
    }

    /// Answers `waiters` with `result`; with `write_through`, once the health
    /// factors the engine changed are committed.
    pub(super) fn answer(
        &mut self,
        ctx: &mut Context<Self>,
        waiters: Vec<Waiter>,
        result: ActorResult<()>,
        write_through: bool,
    ) {
        if write_through && result.is_ok() && self.engine().has_dirty() {
            let write = self.write_back(ctx, Pace::Urgent);
            ctx.spawn(
                async move {
                    write.await;
                    for w in waiters {
                        let _ = w.send(Ok(()));
                    }
                }
                .into_actor(self),
            );
            return;
        }
        self.schedule_write_back(ctx);
        for w in waiters {
            let _ = w.send(result.clone());
        }
    }

    // ---- the health factors written back (`write_back.rs`) --------------------

    /// Starts a background write-back of the health factors the engine
    /// changed, when `write_back.rs` says (one at a time; it looks again
    /// when it ends).
    fn schedule_write_back(&mut self, ctx: &mut Context<Self>) {
        if self.lease == Lease::Elsewhere {
            // The lease holder computes the same values and writes them.
            let engine = self.engine_mut();
            let believed = engine.take_dirty();
            engine.written(believed, true);
            return;
        }
        let Some(wait) = self.writing.schedule(self.engine().dirty_count()) else {
            return;
        };
        ctx.run_later(wait, |act, ctx| {
            let write = act.write_back(ctx, Pace::Background);
            ctx.spawn(write.into_actor(act).map(|(), act, ctx| {
                act.writing.ended();
                act.schedule_write_back(ctx);
            }));
        });
    }

    /// Takes every pending health factor to be written (`write_back.rs`);
    /// the future resolves once all are committed or given back.
    pub(super) fn write_back(
        &mut self,
        ctx: &mut Context<Self>,
        pace: Pace,
    ) -> impl Future<Output = ()> + 'static {
        let taken = self.engine_mut().take_dirty();
        let me = ctx.address().recipient();
        self.writing
            .write(taken, pace, me, self.writer.clone(), self.cluster)
    }

    /// A chunk of the write-back committed, or given back to be tried again.
    pub(super) fn written_back(&mut self, ctx: &mut Context<Self>, msg: WrittenBack) {
        self.engine_mut().written(msg.batch, msg.ok);
        if !msg.ok {
            tracing::warn!("health factor write-back failed; will retry");
            self.schedule_write_back(ctx);
        }
    }

    // ---- the database's announcements ------------------------------------------

    /// A NOTIFY heard, or the LISTEN connection's state.
    pub(super) fn on_notice(&mut self, notice: Notice, ctx: &mut Context<Self>) {
        match notice {
            Notice::Listening(up) => self.listening_is(up, ctx),
            Notice::Resync => self.resync(ctx),
            Notice::Ticked { tick, heard } => {
                if tick > self.views.applied() || !self.views.is_loaded() {
                    self.enqueue(
                        ctx,
                        |p| {
                            p.read_log = true;
                            p.notify_heard = earliest(p.notify_heard, Some(heard));
                        },
                        None,
                    );
                }
            }
            Notice::BorrowsChanged(owners) => self.borrows_changed(&owners),
        }
    }

    /// After a lost LISTEN connection: announcements may have been missed,
    /// not changes (the change log holds them all), so the log is read; the
    /// borrow lists, told by announcements alone, are forgotten.
    fn resync(&mut self, ctx: &mut Context<Self>) {
        self.borrows.forget_all();
        self.enqueue(ctx, |p| p.read_log = true, None);
    }

    /// Whether the LISTEN connection is up (health reports a cache that may
    /// miss changes).
    fn listening_is(&mut self, up: bool, ctx: &mut Context<Self>) {
        // The first LISTEN came up after a load had begun (start stopped waiting
        // for it): what was announced in between is unknown. Later reconnects
        // say so on their own (lendex_store::listen).
        let first = self.listening.set(up);
        if first && (self.views.is_loaded() || self.reads.running()) {
            self.resync(ctx);
        }
    }

    /// Resolves once the LISTEN connection is up (at once if it is).
    pub(super) fn await_listening(&mut self) -> impl Future<Output = ()> + 'static {
        let waiting = self.listening.wait();
        async move {
            if let Some(up) = waiting {
                let _ = up.await;
            }
        }
    }

    // ---- a wallet's borrows --------------------------------------------------------

    /// Borrows of these wallets were written: their cached lists are stale.
    pub(super) fn borrows_changed(&mut self, owners: &[Pubkey]) {
        for view in self.views.iter() {
            view.forget_details(owners);
        }
        self.borrows.changed(owners);
    }

    /// A wallet's borrows as read, kept unless a borrow was written since.
    pub(super) fn keep_borrows(&mut self, owner: Pubkey, borrows: Borrows, generation: u64) {
        self.borrows.keep(owner, borrows, generation);
    }

    // ---- reads of a view ------------------------------------------------------------

    /// Whether `view`'s engine holds `owner` (else it is read back first).
    pub(super) fn knows(&self, owner: &Pubkey, view: ViewKey) -> ActorResult<bool> {
        self.loaded()?;
        Ok(self.views.get(view)?.engine().knows(owner))
    }

    /// An owner's positions in `view`, with the wallet's borrows when held.
    pub(super) fn owner_positions(
        &mut self,
        owner: &Pubkey,
        view: ViewKey,
    ) -> ActorResult<OwnerPositions> {
        let borrows = self.borrows.get(owner);
        Ok(self.views.get_mut(view)?.owner_positions(owner, borrows))
    }

    /// A new stream. A reconnect naming a change not applied here yet waits
    /// for it (a log read is asked for at once), at most `RESUME_WAIT`.
    pub(super) fn subscribe(
        &mut self,
        ctx: &mut Context<Self>,
        msg: Subscribe,
        reply: oneshot::Sender<ActorResult<FeedStream>>,
    ) {
        if !self.views.is_loaded() {
            let _ = reply.send(Err(not_loaded()));
            return;
        }
        let started = self.reads.started();
        let parked = match self.views.get_mut(msg.view) {
            Ok(view) => view.subscribe(msg, started, reply),
            Err(e) => {
                let _ = reply.send(Err(e));
                false
            }
        };
        if parked {
            self.enqueue(ctx, |p| p.read_log = true, None);
            ctx.run_later(RESUME_WAIT, |act, _| act.views.unpark(false, 0));
        }
    }

    /// Every view's open streams end (the service stops).
    pub(super) fn close_streams(&mut self) {
        for view in self.views.iter_mut() {
            view.streams_mut().close_streams();
        }
        self.views.unpark(false, 0);
    }

    /// A rendered-answer miss: the actor renders, keeps it for other readers.
    pub(super) fn render(&self, answer: Answer, view: ViewKey) -> ActorResult<Body> {
        self.loaded()?;
        let view = self.views.get(view)?;
        Ok(view.render(answer, now_seconds(), self.max_oracle_age))
    }

    /// What health and /metrics report of the cache.
    pub(super) fn stats(&self) -> CacheStats {
        let confirmed = self.views.confirmed();
        let (engine, (subscribers, dropped_subscribers)) =
            (confirmed.engine(), confirmed.streams().counts());
        CacheStats {
            ready: self.views.is_loaded(),
            listening: self.listening.is_up(),
            pools: engine.pool_count(),
            owners: engine.owner_count(),
            unhealthy_owners: engine.unhealthy_count(),
            watched_owners: engine.watched_count(),
            evictions: engine.evictions(),
            subscribers,
            dropped_subscribers,
            feed_version: engine.version(),
            reads: self.reads.started(),
            feeds: self.views.oracle_feeds().map(|feeds| {
                let now = now_seconds();
                (engine.pools())
                    .map(|p| (p.address_text.to_string(), pool_feed(feeds, &p.state, now)))
                    .collect()
            }),
        }
    }

    /// GET /api/pools/status, from the confirmed engine.
    pub(super) fn pool_status(&self) -> ActorResult<Bytes> {
        self.loaded()?;
        let served = Served {
            cluster: self.cluster,
            explorer_query: &self.explorer_query,
        };
        let now = now_seconds();
        let feeds = self.views.oracle_feeds();
        let status = pool_status(self.engine(), feeds, now, self.max_oracle_age, served);
        Ok(render::json(&status))
    }

    /// The risk lens, from the confirmed engine.
    pub(super) fn risk(&self, query: RiskQuery) -> ActorResult<Result<Bytes, RiskError>> {
        self.loaded()?;
        let engine = self.engine();
        let body = match query {
            RiskQuery::Shock { shocks, limit } => {
                let now = now_seconds();
                risk::shock_response(engine, &shocks, limit, now, self.max_oracle_age)
                    .map(|answer| render::json(&answer))
            }
            RiskQuery::Curve {
                pool,
                from_bps,
                to_bps,
                steps,
            } => risk::curve_response(engine, &pool, from_bps, to_bps, steps)
                .map(|answer| render::json(&answer)),
        };
        Ok(body)
    }

    /// Reads answer 503 until the views are loaded (`not_loaded`).
    fn loaded(&self) -> ActorResult<()> {
        if self.views.is_loaded() {
            Ok(())
        } else {
            Err(not_loaded())
        }
    }

    /// The confirmed engine: what the write-back, history, the risk lens
    /// and the pool status read.
    pub(super) fn engine(&self) -> &Engine {
        self.views.confirmed().engine()
    }

    fn engine_mut(&mut self) -> &mut Engine {
        self.views.confirmed_engine_mut()
    }

    // ---- the lease, and history (`history.rs`) ----------------------------------

    /// Takes what the engine recorded to history's writer (while recording).
    pub(super) fn record_history(&mut self) {
        if let Some(link) = self.history.as_mut() {
            link.record(self.views.confirmed_engine_mut());
        }
    }

    /// A sample of the market for history, while recording.
    fn sample_market(&mut self) {
        if let (Some(link), true) = (self.history.as_mut(), self.views.is_loaded()) {
            link.sample(self.views.confirmed().engine());
        }
    }

    /// Whether changes wait for recording to start (`HistoryLink::holds_changes`).
    pub(super) fn holds_changes(&self) -> bool {
        self.history.as_ref().is_some_and(|l| l.holds_changes())
    }

    /// The cache holds the index now: a takeover that waited for it starts.
    pub(super) fn on_ready(&mut self, ctx: &mut Context<Self>) {
        if self.lease == Lease::Held {
            self.take_over(ctx);
        }
    }

    /// This replica took the ingester lease, or another did.
    pub(super) fn leader_changed(&mut self, leader: bool, ctx: &mut Context<Self>) {
        self.lease = if leader {
            Lease::Held
        } else {
            Lease::Elsewhere
        };
        if leader {
            // What the previous writer stored is not known here: every value
            // is written, those already stored cost a comparison each.
            self.engine_mut().forget_stored();
            self.schedule_write_back(ctx);
        }
        let Some(link) = self.history.as_mut() else {
            return;
        };
        if leader {
            // Nothing is applied until the takeover has started recording.
            if !link.is_recording() {
                link.hold();
                ctx.run_later(HOLD_AT_MOST, |act, ctx| act.pump(ctx));
            }
            self.take_over(ctx);
        } else if link.is_recording() {
            link.step_down(self.views.confirmed_engine_mut());
        } else if link.release() {
            // A follower records nothing: nothing to wait for.
            self.pump(ctx);
        }
    }

    /// Asks the writer for the baselines and starts recording from them
    /// (once the engine holds the index: a takeover diffs against it).
    fn take_over(&mut self, ctx: &mut Context<Self>) {
        if self.lease != Lease::Held || !self.views.is_loaded() {
            // Started again when the first load is applied (`on_ready`).
            return;
        }
        let Some(ask) = self.history.as_mut().and_then(HistoryLink::take_over) else {
            return;
        };
        ctx.spawn(ask.into_actor(self).map(|answer, act, ctx| {
            let leader = act.lease == Lease::Held;
            let engine = act.views.confirmed_engine_mut();
            let Some(link) = act.history.as_mut() else {
                return;
            };
            match link.took_over(answer, leader, engine) {
                TookOver::Recording => {
                    if link.release() {
                        act.pump(ctx);
                    }
                }
                TookOver::Retry => {
                    ctx.run_later(RETRY_TAKEOVER, |act, ctx| act.take_over(ctx));
                }
                TookOver::Nothing => {}
            }
        }));
    }
}

impl Actor for HealthCache {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(65_536);
        let me = ctx.address();
        actix_rt::spawn(listen_forever(
            self.database_url.clone(),
            self.cluster,
            self.origin.clone(),
            move |notice| {
                me.do_send(DatabaseNotice(notice));
                me.connected()
            },
        ));
        if let Some(link) = &self.history {
            // The market's samples, and what waited for the lease's first
            // answer applied if it never comes.
            ctx.run_interval(link.market_every(), |act, _| act.sample_market());
            ctx.run_later(HOLD_AT_MOST, |act, ctx| act.pump(ctx));
        }
        // Subscribers that hung up are let go at once, not at the next event.
        ctx.run_interval(PRUNE_EVERY, |act, _| {
            for view in act.views.iter_mut() {
                let streams = view.streams_mut();
                streams.prune_closed();
                // A tick whose position was held back (sent at most so often).
                streams.announce_progress();
            }
        });
        ctx.run_interval(LOG_PRUNE_EVERY, |act, ctx| {
            if act.lease == Lease::Elsewhere {
                return;
            }
            let (db, keep) = (act.db.clone(), act.log_keep_seconds);
            ctx.spawn(
                async move {
                    if let Err(e) = lendex_store::change_log::prune(&db, keep).await {
                        tracing::warn!(error = %e, "change log not pruned; will retry");
                    }
                }
                .into_actor(act),
            );
        });
    }
}

/// The feed answers 503 until the cache has loaded (the database may be down).
pub(super) fn not_loaded() -> ActorError {
    ActorError::database("the health cache is not loaded yet")
}
