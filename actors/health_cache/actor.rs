//! The actor around the engine: its state, the write-back of the engine's
//! health factors to `positions` through the database writer, rendering, and
//! how a subscription reaches a view's feed (docs/design.md §11, §13). How
//! changes reach the engines (the change log read tick after tick, reloads,
//! evicted owners) is `pipeline.rs`; what each view holds, `view.rs`.

use std::time::Duration;

use actix::prelude::*;
use deadpool_postgres::Pool;
use tokio::sync::oneshot;

use super::borrow_lists::BorrowLists;
use super::feed_hub::RESUME_WAIT;
use super::listening::Listening;
use super::messages::{DatabaseNotice, Subscribe};
use super::read_queue::{ReadQueue, Waiter};
use super::view::Views;
use super::write_back::{Pace, WriteBack};
use crate::db_writer::Writers;
use crate::domain::forks::Commitment;
use crate::engine::Engine;
use crate::error::{ActorError, ActorResult};
use crate::feed::poll_answers::{Body, SharedRendered, now_seconds};
use crate::feed::render::Answer;
use crate::feed::subscriber::FeedStream;
use crate::settings::{CacheConfig, HealthConfig};
use lendex_store::listen::listen_forever;

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
pub(super) enum Lease {
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
    pub(super) db: Pool,
    writer: Writers,
    database_url: String,
    /// This replica's name in the NOTIFY of its own borrows (see `lendex_store::listen`).
    origin: String,
    pub(super) cluster: &'static str,
    /// Appended to explorer links of this cluster (GET /api/pools/status).
    pub(super) explorer_query: String,
    pub(super) max_oracle_age: i64,
    /// Seconds of the change log kept (the lease holder prunes the rest).
    log_keep_seconds: f64,
    /// The views served, each with its engine, answers and feed (`view.rs`).
    pub(super) views: Views,
    pub(super) ready: bool,
    /// The LISTEN connection: up or not, and who waits for it.
    pub(super) listening: Listening,
    /// The reads of the database, one at a time, and who waits on them.
    pub(super) reads: ReadQueue,
    /// The last tick of the feed's change log the engine holds.
    pub(super) applied: u64,
    /// When, in what order and at what pace health factors are written back.
    pub(super) writing: WriteBack,
    /// Recent borrows per wallet (the detail's borrow_txs).
    pub(super) borrows: BorrowLists,
    /// History's writer and this replica's part in it (None: history is off).
    pub(super) history: Option<super::history_link::HistoryLink>,
    /// Whether this replica holds the ingester lease (`LeaderChanged`).
    pub(super) lease: Lease,
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
        history: Option<super::history_link::HistoryLink>,
        leased: bool,
    ) -> Self {
        let Settings {
            cache,
            health,
            database_url,
            cluster,
            rpc_url,
            processed,
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
            views: Views::new(cache, max_oracle_age, processed),
            ready: false,
            listening: Listening::default(),
            reads: ReadQueue::default(),
            applied: 0,
            writing: WriteBack::default(),
            borrows: BorrowLists::default(),
            history,
            lease: if leased {
                Lease::Elsewhere
            } else {
                Lease::Unused
            },
        }
    }

    /// The rendered unhealthy answers, for HTTP workers to read directly.
    pub fn rendered(&self) -> SharedRendered {
        self.views.confirmed().rendered().clone()
    }

    /// The processed view's rendered answers, when it is served.
    pub fn rendered_processed(&self) -> Option<SharedRendered> {
        let processed = self.views.get(Commitment::Processed).ok();
        processed.map(|view| view.rendered().clone())
    }

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

    /// Starts a background write-back of the health factors the engine
    /// changed, when `write_back.rs` says (one at a time; it looks again
    /// when it ends).
    pub(super) fn schedule_write_back(&mut self, ctx: &mut Context<Self>) {
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

    pub(super) fn after_write_back(&mut self, ctx: &mut Context<Self>, ok: bool) {
        if !ok {
            tracing::warn!("health factor write-back failed; will retry");
            self.schedule_write_back(ctx);
        }
    }

    /// Every view's feed starts over at `tick` of feed `epoch` (a load): what
    /// led there is not numbered, and with `close` open streams end.
    pub(super) fn restart_feed(&mut self, epoch: u64, tick: u64, close: bool) {
        self.applied = tick;
        self.views.restart(epoch, tick, close);
    }

    /// A new stream. A reconnect naming a change not applied here yet waits
    /// for it (a log read is asked for at once), at most `RESUME_WAIT`.
    pub(super) fn subscribe(
        &mut self,
        ctx: &mut Context<Self>,
        msg: Subscribe,
        reply: oneshot::Sender<ActorResult<FeedStream>>,
    ) {
        if !self.ready {
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
            ctx.run_later(RESUME_WAIT, |act, _| act.unpark(false, 0));
        }
    }

    /// Answers the parked reconnects that can be (after log read `number`
    /// when `read_log`).
    pub(super) fn unpark(&mut self, read_log: bool, number: u64) {
        self.views.unpark(read_log, number, self.applied);
    }

    /// A rendered-answer miss: the actor renders, keeps it for other readers.
    pub(super) fn render(&self, answer: Answer, view: Commitment) -> ActorResult<Body> {
        if !self.ready {
            return Err(not_loaded());
        }
        let view = self.views.get(view)?;
        Ok(view.render(answer, now_seconds(), self.max_oracle_age))
    }

    /// The confirmed engine: what the write-back, history, the risk lens
    /// and the pool status read.
    pub(super) fn engine(&self) -> &Engine {
        self.views.confirmed().engine()
    }

    pub(super) fn engine_mut(&mut self) -> &mut Engine {
        self.views.confirmed_engine_mut()
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
        self.start_history_timers(ctx);
        // Subscribers that hung up are let go at once, not at the next event.
        ctx.run_interval(PRUNE_EVERY, |act, _| {
            for view in act.views.iter_mut() {
                let feed = view.feed_mut();
                feed.prune_closed();
                // A tick whose position was held back (sent at most so often).
                feed.announce_progress();
            }
        });
        ctx.run_interval(LOG_PRUNE_EVERY, |act, ctx| {
            if act.lease == Lease::Elsewhere {
                return;
            }
            let (db, keep) = (act.db.clone(), act.log_keep_seconds);
            ctx.spawn(
                async move {
                    if let Err(e) = lendex_store::feed_log::prune(&db, keep).await {
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
