//! The actor around the engine: it reads changed rows (through the loader), feeds
//! them to the engine, publishes what changed (SSE frames, rendered answers) and
//! writes the engine's health factors to `positions` through the database writer.
//!
//! Database reads can complete out of order, so changes are queued and one read
//! runs at a time: the next starts only after the previous one was applied. A
//! full reload goes through the same queue. Readers of the feed are never blocked.

use std::collections::HashSet;
use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

use actix::prelude::*;
use bytes::Bytes;
use deadpool_postgres::Pool;
use lru::LruCache;
use tokio::sync::oneshot;

use super::messages::{Borrows, Heard};
use super::write_back::{Pace, WriteBack};
use crate::actors::db_writer::Writers;
use crate::config::Config;
use crate::db::engine_rows::{self as loader, ChangedRows, Everything};
use crate::db::listen::listen_forever;
use crate::domain::pubkey::Pubkey;
use crate::engine::answers::{self, Answer};
use crate::engine::{Change, Engine};
use crate::error::{ApiError, ApiResult};
use crate::feed::rendered::{Body, OwnerBody, SharedRendered, now_seconds};
use crate::feed::replay::{Replay, new_epoch};
use crate::feed::subscriber::Subscriber;

const ALL_BODIES: [OwnerBody; 2] = [OwnerBody::Positions, OwnerBody::Detail];
/// Wallets whose recent borrows are kept in memory.
const BORROW_LISTS: NonZeroUsize = NonZeroUsize::new(50_000).expect("non-zero");
/// How often subscribers whose connection closed are let go.
const PRUNE_EVERY: Duration = Duration::from_secs(1);

pub(super) type Waiter = oneshot::Sender<ApiResult<()>>;

/// Changes waiting for the next database read.
#[derive(Default)]
pub(super) struct Pending {
    pub reload_all: bool,
    pub owners: HashSet<Pubkey>,
    pub pools: HashSet<Pubkey>,
    /// Pools whose evicted owners must be re-loaded from the database.
    pub fallback_pools: HashSet<Pubkey>,
    pub waiters: Vec<Waiter>,
    /// Some waiter wants the health factors written before it is answered.
    pub write_through: bool,
    /// Committed changes of this replica's own writes, applied as they are
    /// (no read), before the next read starts and never during one: a read in
    /// flight may predate them.
    pub direct: Vec<Change>,
    /// When the first NOTIFY of the batch was heard (freshness metrics).
    pub notify_heard: Option<Instant>,
    /// When the chain notified the first of `direct` (on the leader).
    pub chain_heard: Option<Instant>,
}

/// The earlier of two instants, either possibly unknown.
pub(super) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        _ => a.or(b),
    }
}

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

impl Pending {
    fn is_empty(&self) -> bool {
        !self.reload_all
            && self.owners.is_empty()
            && self.pools.is_empty()
            && self.fallback_pools.is_empty()
    }
}

pub struct HealthCache {
    db: Pool,
    writer: Writers,
    database_url: String,
    /// This replica's name in the NOTIFY of its own writes (see `db::listen`).
    origin: String,
    pub(super) cluster: &'static str,
    /// Appended to explorer links of this cluster (GET /api/pools/status).
    pub(super) explorer_query: String,
    pub(super) max_oracle_age: i64,
    pub(super) engine: Engine,
    pub(super) rendered: SharedRendered,
    /// The engine version the rendered answers were made from.
    pub(super) rendered_version: u64,
    pub(super) ready: bool,
    pub(super) listening: bool,
    /// Callers of `AwaitListening` until the LISTEN connection is up.
    pub(super) listening_waiters: Vec<tokio::sync::oneshot::Sender<()>>,
    /// The LISTEN connection has been up at least once.
    pub(super) listened: bool,
    pending: Pending,
    pub(super) fetching: bool,
    /// Batches of changed rows read from the database (this replica's own
    /// writes are applied without one).
    pub(super) reads: u64,
    /// When, in what order and at what pace health factors are written back.
    pub(super) writing: WriteBack,
    pub(super) subscribers: Vec<Subscriber>,
    pub(super) dropped_subscribers: u64,
    /// Unread bytes one subscriber may hold beyond its snapshot before it is dropped.
    pub(super) subscriber_max_lag: usize,
    /// The last snapshot, shared by subscribers that connect before the feed
    /// changes: ((engine version, last event, second it was rendered at), frames).
    pub(super) snapshot: Option<((u64, u64, i64), Bytes)>,
    /// The recent live events, for reconnects to resume from.
    pub(super) replay: Replay,
    /// When a subscriber was last seen (events are kept a while after).
    pub(super) listened_at: Option<Instant>,
    /// The service is stopping: no stream stays open.
    pub(super) streams_closed: bool,
    /// Recent borrows per wallet (detail's borrow_txs), loaded on first read and
    /// forgotten when a borrow of the wallet is written (here or by NOTIFY).
    pub(super) borrows: LruCache<Pubkey, Borrows>,
    /// Bumped by every such change: a load that started before is not kept.
    pub(super) borrow_generation: u64,
    /// History's writer and this replica's part in it (None: history is off).
    pub(super) history: Option<super::history_link::HistoryLink>,
    /// Whether this replica holds the ingester lease (`LeaderChanged`).
    pub(super) lease: Lease,
}

impl HealthCache {
    /// Reads with `db`, writes health factors through `writer`; `origin` names
    /// this replica's writes (see `db::listen`); `leased`: the replicas
    /// contend for the ingester lease, and its holder alone writes the
    /// health factors (it says so with `LeaderChanged`); the rest comes from
    /// `config`.
    pub fn new(
        db: Pool,
        writer: Writers,
        origin: String,
        config: &Config,
        history: Option<super::history_link::HistoryLink>,
        leased: bool,
    ) -> Self {
        HealthCache {
            db,
            writer,
            database_url: config.database.url.clone(),
            origin,
            cluster: config.chain.cluster.as_str(),
            explorer_query: crate::wire::pools::explorer_query(
                config.chain.cluster.as_str(),
                &config.rpc.url,
            ),
            max_oracle_age: i64::try_from(config.health.max_oracle_age_seconds).unwrap_or(i64::MAX),
            engine: Engine::new(config.cache.max_owners),
            rendered: SharedRendered::default(),
            rendered_version: 0,
            ready: false,
            listening: false,
            listening_waiters: Vec::new(),
            listened: false,
            pending: Pending::default(),
            fetching: false,
            reads: 0,
            writing: WriteBack::default(),
            subscribers: Vec::new(),
            dropped_subscribers: 0,
            subscriber_max_lag: config.cache.subscriber_max_lag_bytes,
            snapshot: None,
            replay: Replay::new(new_epoch(), config.cache.replay_bytes),
            listened_at: None,
            streams_closed: false,
            borrows: LruCache::new(BORROW_LISTS),
            borrow_generation: 0,
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
        self.rendered.clone()
    }

    pub(super) fn enqueue(
        &mut self,
        ctx: &mut Context<Self>,
        edit: impl FnOnce(&mut Pending),
        waiter: Option<Waiter>,
    ) {
        edit(&mut self.pending);
        self.pending.waiters.extend(waiter);
        self.pump(ctx);
    }

    fn pump(&mut self, ctx: &mut Context<Self>) {
        if self.fetching {
            return;
        }
        if !self.pending.direct.is_empty() {
            let heard = self.pending.chain_heard.take();
            self.apply_direct();
            if self.publish()
                && let Some(heard) = heard
            {
                crate::metrics::feed_freshness_chain(heard.elapsed());
            }
            // After the feed: its subscribers wait on the publish, history does not.
            self.record_history();
        }
        if self.pending.is_empty() {
            let waiters = std::mem::take(&mut self.pending.waiters);
            let through = std::mem::take(&mut self.pending.write_through);
            self.answer(ctx, waiters, Ok(()), through);
            return;
        }
        self.fetching = true;
        self.reads += 1;
        let batch = std::mem::take(&mut self.pending);
        let (db, cluster) = (self.db.clone(), self.cluster);
        if batch.reload_all {
            let read = async move { loader::load_everything(&db, cluster).await };
            ctx.spawn(read.into_actor(self).map(move |result, act, ctx| {
                let result = result.map(|everything| act.apply_everything(everything));
                act.finish(ctx, batch, result);
            }));
        } else {
            let owners: Vec<Pubkey> = batch.owners.iter().copied().collect();
            let pools: Vec<Pubkey> = batch.pools.iter().copied().collect();
            let fallback: Vec<Pubkey> = batch.fallback_pools.iter().copied().collect();
            let started = std::time::Instant::now();
            let read =
                async move { loader::load_changes(&db, cluster, &owners, &pools, &fallback).await };
            ctx.spawn(read.into_actor(self).map(move |result, act, ctx| {
                let fetched = started.elapsed();
                let result = result.map(|rows| act.apply_changes(rows));
                let applied = started.elapsed();
                crate::metrics::engine_applied(applied - fetched);
                act.finish(ctx, batch, result);
                let ms = |d: Duration| d.as_secs_f64() * 1e3;
                tracing::debug!(
                    fetch_ms = ms(fetched),
                    apply_ms = ms(applied - fetched),
                    publish_ms = ms(started.elapsed() - applied),
                    "cache applied changes"
                );
            }));
        }
    }

    fn apply_everything(&mut self, everything: Everything) {
        self.rendered
            .forget_owner_bodies(None::<std::iter::Empty<&Pubkey>>, &[]);
        self.engine.clear();
        for pool in everything.pools {
            self.engine.upsert_pool(pool);
        }
        let owners = everything.owners.len();
        self.apply_owners(everything.owners);
        self.engine.end_reload();
        self.ready = true;
        release_load_memory();
        tracing::info!(
            pools = self.engine.pool_count(),
            owners,
            unhealthy = self.engine.unhealthy_count(),
            "health-factor cache loaded"
        );
    }

    fn apply_changes(&mut self, rows: ChangedRows) {
        // A pool's change shows in every member's answers (values, APYs, symbol).
        if rows.pools.is_empty() && rows.removed_pools.is_empty() {
            self.rendered
                .forget_owner_bodies(Some(rows.owners.keys()), &ALL_BODIES);
        } else {
            self.rendered
                .forget_owner_bodies(None::<std::iter::Empty<&Pubkey>>, &[]);
        }
        // Pools first: owners re-scored below must see the new prices.
        for pool in rows.pools {
            let address = pool.address;
            if self.engine.upsert_pool(pool) {
                // Owners not resident are re-loaded from the database, next batch.
                self.pending.fallback_pools.insert(address);
            }
        }
        for pool in &rows.removed_pools {
            self.engine.remove_pool(pool);
        }
        self.apply_owners(rows.owners);
    }

    /// This replica's committed changes, applied without reading them back;
    /// what the engine cannot apply from memory is read at the next batch.
    /// Before the first load there is nothing to apply them to: the load
    /// (always pending then) reads them.
    fn apply_direct(&mut self) {
        let changes = std::mem::take(&mut self.pending.direct);
        if !self.ready {
            return;
        }
        let started = std::time::Instant::now();
        let pools_changed = changes.iter().any(|c| matches!(c, Change::Pool(_)));
        if pools_changed {
            self.rendered
                .forget_owner_bodies(None::<std::iter::Empty<&Pubkey>>, &[]);
        } else {
            let owners: HashSet<Pubkey> = changes.iter().filter_map(Change::owner).collect();
            self.rendered
                .forget_owner_bodies(Some(owners.iter()), &ALL_BODIES);
        }
        let unapplied = self.engine.apply(changes);
        self.pending.owners.extend(unapplied.owners);
        self.pending.fallback_pools.extend(unapplied.pools);
        crate::metrics::engine_applied(started.elapsed());
    }

    fn apply_owners(&mut self, owners: loader::Owners) {
        for (owner, (positions, stored)) in owners {
            self.engine.set_owner(owner, positions);
            if let Some(stored) = stored {
                self.engine.set_stored(&owner, stored);
            }
        }
    }

    /// After a batch: publish what changed, then answer its waiters (once the
    /// health factors are committed, when one of them asked for that).
    fn finish(&mut self, ctx: &mut Context<Self>, batch: Pending, result: ApiResult<()>) {
        self.fetching = false;
        let failed = result.is_err();
        if let Err(e) = &result {
            tracing::warn!(error = %e, "cache could not read rows; reloading everything");
            self.pending.reload_all = true;
        }
        if self.publish()
            && let Some(heard) = batch.notify_heard
        {
            crate::metrics::feed_freshness_notify(heard.elapsed());
        }
        self.record_history();
        self.answer(ctx, batch.waiters, result, batch.write_through);
        if failed {
            // The database is unreachable: try again shortly rather than spin.
            ctx.run_later(Duration::from_secs(1), |act, ctx| act.pump(ctx));
        } else {
            self.pump(ctx);
        }
    }

    fn answer(
        &mut self,
        ctx: &mut Context<Self>,
        waiters: Vec<Waiter>,
        result: ApiResult<()>,
        write_through: bool,
    ) {
        if write_through && result.is_ok() && self.engine.has_dirty() {
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
            let believed = self.engine.take_dirty();
            self.engine.written(believed, true);
            return;
        }
        let Some(wait) = self.writing.schedule(self.engine.dirty_count()) else {
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
        let taken = self.engine.take_dirty();
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

    /// A rendered-answer miss: the actor renders, keeps it for other readers.
    pub(super) fn render(&self, answer: Answer) -> ApiResult<Body> {
        if !self.ready {
            return Err(not_loaded());
        }
        let now = now_seconds();
        if let Some(body) = self.rendered.answer(&answer, now) {
            return Ok(body);
        }
        let body = Body::new(answers::render(
            &self.engine,
            &answer,
            now,
            self.max_oracle_age,
        ));
        self.rendered.keep_answer(answer, now, body.clone());
        Ok(body)
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
                me.do_send(Heard(notice));
                me.connected()
            },
        ));
        self.start_history_timers(ctx);
        // Subscribers that hung up are let go at once, not at the next event.
        ctx.run_interval(PRUNE_EVERY, |act, _| {
            act.subscribers.retain(|s| !s.is_closed());
            act.keep_recording();
        });
    }
}

/// The feed answers 503 until the cache has loaded (the database may be down).
pub(super) fn not_loaded() -> ApiError {
    ApiError::database("the health cache is not loaded yet")
}

/// A cold load holds every row twice for a moment (as read, then as held);
/// give what it freed back to the system, so a million positions do not cost
/// their peak for the life of the process.
fn release_load_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}
