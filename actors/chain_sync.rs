//! The chain-sync worker: keeps the index fresh with no API call. Every
//! `sync.interval_seconds` it re-reads every registered pool (getMultipleAccounts,
//! batches of 100) and scans each pool's positions (getProgramAccounts), upserting
//! what changed and removing positions closed on chain. All reads go through the
//! chain reader (rate limit, concurrency cap, coalescing); they become writes
//! through the one ingest step (`crate::ingest`), committed by the database
//! writer and applied to this replica's engine (`health_cache::commit`). One refresh runs at a time, and only on the replica that
//! holds the cluster's ingester lease (`leader_lease`); the others follow.
//! One asked for while another runs waits for it, but its first step, the
//! pools read again (one request per 100), runs at once: a source back from
//! a cut has the prices it missed in a second, not after a reconcile that
//! may take half a minute at 100,000 positions (docs/design.md §7).

use crate::chain::source::NamedFeeds;
use std::time::{Duration, Instant};

use actix::prelude::*;
use chrono::{DateTime, Utc};
use deadpool_postgres::Pool;
use futures_util::future::LocalBoxFuture;
use futures_util::{FutureExt, StreamExt, TryStreamExt};

use crate::chain::settings::{ChainSource, RpcConfig};
use crate::chain_reader::{ChainReader, GetSlot, ReadAccounts, ScanPoolPositions};
use crate::chain_stream::{SlotReport, Source, StreamDeps, StreamReport, stream_forever};
use crate::chain_tip::TipRecorder;
use crate::db_writer::Writers;
use crate::domain::forks::Commitment;
use crate::domain::pubkey::Pubkey;
use crate::error::{ActorError, ActorResult};
use crate::health_cache::{HealthCache, Reaches, commit};
use crate::ingest::Ingest;
use crate::leader_lease::LeaderChanged;
use crate::settings::SyncConfig;
use lendex_store::chain_tip::{ChainTip, RecordTip};
use lendex_store::chain_writes::Reconciled;
use lendex_store::queries;

/// Pools scanned at once in a reconcile (the RPC gate bounds the requests).
const PARALLEL_SCANS: usize = 8;

/// What one complete refresh did.
#[derive(Debug, Clone, Default)]
pub struct RefreshReport {
    pub pools: usize,
    pub positions: u64,
    pub removed: u64,
    /// Lowest context slot among the reads of this refresh.
    pub slot: u64,
    pub took: Duration,
}

/// The state GET /api/health reports.
#[derive(Debug, Clone)]
pub struct SyncStatus {
    pub enabled: bool,
    pub interval: Duration,
    pub last_complete: Option<(DateTime<Utc>, RefreshReport)>,
    pub last_error: Option<String>,
    pub started_at: DateTime<Utc>,
    /// Holds the cluster's ingester lease: this replica does the background work.
    pub leader: bool,
    pub stream: StreamStatus,
    /// Slots between the chain's tip and the oldest read of the last refresh.
    pub lag_slots: Option<u64>,
}

/// The live source, as /api/health reports it.
#[derive(Debug, Clone, Default)]
pub struct StreamStatus {
    /// "websocket" or "grpc".
    pub source: &'static str,
    pub connected: bool,
    pub last_notification_at: Option<DateTime<Utc>>,
    /// Connections made so far (reconnects are the ones after the first).
    pub connections: u64,
    /// Why the source is down, while it is.
    pub last_error: Option<String>,
    pub commitment: Commitment,
    /// The slots the source has reached (docs/design.md §15).
    pub slots: SlotReport,
}

impl SyncStatus {
    /// Fresh while disabled, while the first refresh still has time, or while the
    /// last complete refresh is younger than three intervals plus 30 s; never
    /// while the slot tree reports a problem (docs/design.md §15).
    pub fn is_fresh(&self, now: DateTime<Utc>) -> bool {
        // A follower does no background work: the leader's reaches it by NOTIFY.
        if !self.enabled || !self.leader {
            return true;
        }
        if self.stream.slots.problem.is_some() {
            return false;
        }
        let allowed = chrono::Duration::from_std(self.interval * 3 + Duration::from_secs(30))
            .unwrap_or(chrono::Duration::MAX);
        match &self.last_complete {
            Some((at, _)) => now - *at <= allowed,
            None => now - self.started_at <= allowed,
        }
    }
}

/// What the background chain work (the refresh and the stream) needs.
#[derive(Clone)]
pub struct ChainDeps {
    pub db: Pool,
    pub chain: Addr<ChainReader>,
    pub writer: Writers,
    pub cache: Addr<HealthCache>,
    pub ingest: Ingest,
    /// The feed accounts the pools name, when feeds are read
    /// (docs/design.md §17): the stream follows them.
    pub feeds: Option<NamedFeeds>,
}

/// What one refresh needs; cloned into each refresh job.
#[derive(Clone)]
struct Refresher {
    deps: ChainDeps,
    rpc_timeout: Duration,
}

pub struct ChainSync {
    refresher: Refresher,
    source: Source,
    silence: Duration,
    /// What the gRPC source reads at, and the slot tree's bound.
    commitment: Commitment,
    max_unconfirmed_slots: usize,
    /// The live source's task while leading.
    stream: Option<tokio::task::JoinHandle<()>>,
    /// The reconcile running now, if any (cancelled when the lease is lost).
    refresh: Option<SpawnHandle>,
    /// A reconcile was asked for while one ran: run another when it ends.
    again: bool,
    /// The pools being read again alone (a reconcile asked for while one
    /// runs), cancelled with the reconcile when the lease is lost.
    reading_pools: Option<SpawnHandle>,
    status: SyncStatus,
    running: bool,
    /// The slots recorded for the followers while leading.
    tips: TipRecorder,
}

impl ChainSync {
    /// The settings it reads: rpc.source, rpc.ws_url, rpc.grpc_url,
    /// rpc.grpc_x_token, rpc.commitment, rpc.max_unconfirmed_slots, rpc.url,
    /// rpc.ws_silence_ms, rpc.timeout_ms and sync.interval_seconds.
    pub fn new(deps: ChainDeps, rpc: &RpcConfig, sync: &SyncConfig) -> ChainSync {
        let interval = Duration::from_secs(sync.interval_seconds);
        let source = match rpc.source {
            ChainSource::Websocket => Source::Websocket {
                url: crate::chain::websocket::ws_url(&rpc.ws_url, &rpc.url),
            },
            ChainSource::Grpc => Source::Grpc(crate::chain::grpc::Endpoint {
                url: rpc.grpc_url.clone(),
                x_token: Some(rpc.grpc_x_token.clone()).filter(|t| !t.is_empty()),
            }),
        };
        let stream = StreamStatus {
            source: source.name(),
            commitment: rpc.commitment,
            ..StreamStatus::default()
        };
        ChainSync {
            source,
            commitment: rpc.commitment,
            max_unconfirmed_slots: rpc.max_unconfirmed_slots,
            silence: Duration::from_millis(rpc.ws_silence_ms.max(30)),
            stream: None,
            refresh: None,
            again: false,
            reading_pools: None,
            refresher: Refresher {
                deps,
                rpc_timeout: Duration::from_millis(rpc.timeout_ms),
            },
            status: SyncStatus {
                enabled: !interval.is_zero(),
                interval,
                last_complete: None,
                last_error: None,
                started_at: Utc::now(),
                leader: false,
                stream,
                lag_slots: None,
            },
            running: false,
            tips: TipRecorder::default(),
        }
    }

    /// One full refresh, as a future that owns what it needs.
    fn refresh_job(&self) -> impl Future<Output = ActorResult<RefreshReport>> + 'static {
        self.refresher.clone().run()
    }

    fn start_refresh(&mut self, ctx: &mut Context<Self>) {
        if !self.status.leader || !self.status.enabled {
            return;
        }
        if self.running {
            self.again = true;
            self.refresh_pools(ctx);
            return;
        }
        self.again = false;
        self.running = true;
        let job = self.refresh_job();
        let chain = self.refresher.deps.chain.clone();
        let job = async move {
            let report = job.await?;
            // Lag: how far the chain has moved past the oldest read of this refresh.
            let tip = chain
                .send(GetSlot {
                    deadline: Duration::from_secs(1),
                })
                .await
                .ok()
                .and_then(Result::ok);
            Ok::<_, ActorError>((report, tip))
        };
        let handle = ctx.spawn(job.into_actor(self).map(|result, act, ctx| {
            act.running = false;
            act.refresh = None;
            if act.again {
                act.start_refresh(ctx);
            }
            match result {
                Ok((report, tip)) => {
                    tracing::info!(
                        pools = report.pools, positions = report.positions, removed = report.removed,
                        slot = report.slot, lag_slots = tip.map(|t| t.saturating_sub(report.slot)),
                        took_ms = report.took.as_millis() as u64, "chain refresh complete"
                    );
                    crate::metrics::sync_reconciled(true);
                    act.status.lag_slots = tip.map(|t| t.saturating_sub(report.slot));
                    act.status.last_error = None;
                    act.status.last_complete = Some((Utc::now(), report));
                }
                Err(e) => {
                    crate::metrics::sync_reconciled(false);
                    tracing::warn!(error = %e, "chain refresh failed; the index keeps its last rows");
                    // Health shows the short reason; the cause is in the log.
                    act.status.last_error = Some(e.kind().to_string());
                }
            }
        }));
        self.refresh = Some(handle);
    }

    /// The pools read again and committed now, while a reconcile runs (at
    /// most one such read at a time; the reconcile that follows reads them
    /// again anyway). Its writes are slot-guarded, as every pool write.
    fn refresh_pools(&mut self, ctx: &mut Context<Self>) {
        if self.reading_pools.is_some() {
            return;
        }
        let refresher = self.refresher.clone();
        let job = async move {
            let pools = refresher.read_pools().await?;
            pools.written.await
        };
        let handle = ctx.spawn(job.into_actor(self).map(|result, act, _| {
            act.reading_pools = None;
            if let Err(e) = result {
                tracing::warn!(error = %e, "pools not read again; the running reconcile reads them");
            }
        }));
        self.reading_pools = Some(handle);
    }
}

impl Actor for ChainSync {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if self.status.enabled {
            // The first refresh starts when the lease is taken (`LeaderChanged`).
            ctx.run_interval(self.status.interval, |act, ctx| act.start_refresh(ctx));
        }
    }
}

impl Handler<LeaderChanged> for ChainSync {
    type Result = ();

    fn handle(&mut self, msg: LeaderChanged, ctx: &mut Self::Context) {
        self.status.leader = msg.0;
        self.tips.forget();
        if !self.status.enabled {
            return; // the lease is held for history alone
        }
        // Whatever ingests stops now: never two ingesters. (Writes already
        // queued still commit; they are slot-guarded.)
        if let Some(stream) = self.stream.take() {
            stream.abort();
            self.status.stream.connected = false;
        }
        if let Some(refresh) = self.refresh.take() {
            ctx.cancel_future(refresh);
            self.running = false;
            self.again = false;
        }
        if let Some(pools) = self.reading_pools.take() {
            ctx.cancel_future(pools);
        }
        if msg.0 {
            // A new leader catches up at once rather than at the next tick,
            // and streams (its first subscription asks for another reconcile).
            self.start_refresh(ctx);
            let ChainDeps {
                db,
                chain,
                writer,
                cache,
                ingest,
                feeds,
            } = self.refresher.deps.clone();
            let deps = StreamDeps {
                db,
                chain,
                writer,
                cache,
                ingest,
                feeds,
                source: self.source.clone(),
                silence: self.silence,
                commitment: self.commitment,
                max_unconfirmed_slots: self.max_unconfirmed_slots,
            };
            self.stream = Some(actix_rt::spawn(stream_forever(
                deps,
                ctx.address().recipient(),
            )));
        }
    }
}

impl Handler<StreamReport> for ChainSync {
    type Result = ();

    fn handle(&mut self, msg: StreamReport, ctx: &mut Self::Context) {
        let stream = &mut self.status.stream;
        match msg {
            StreamReport::Up { reconcile } => {
                stream.connected = true;
                stream.connections += 1;
                stream.last_error = None;
                // Subscribed first, now reconcile what the source may have
                // missed (nothing when it resent it).
                if reconcile {
                    self.start_refresh(ctx);
                }
            }
            StreamReport::Down { reason } => {
                stream.connected = false;
                stream.last_error = Some(reason);
            }
            StreamReport::AccountUpdate { at } => stream.last_notification_at = Some(at),
            StreamReport::Slots(slots) => {
                let tip = ChainTip {
                    processed: slots.processed,
                    confirmed: slots.confirmed,
                };
                stream.slots = slots;
                if self.status.leader
                    && let Some(tip) = self.tips.report(tip)
                {
                    self.record_tip(tip, ctx);
                }
            }
            StreamReport::Reconcile { why } => {
                tracing::info!(why, "the live source asked for a reconcile");
                self.start_refresh(ctx);
            }
        }
    }
}

impl ChainSync {
    /// Writes the leader's slots for the followers; the next waits for it.
    fn record_tip(&mut self, tip: ChainTip, ctx: &mut Context<Self>) {
        let writer = self.refresher.deps.writer.clone();
        let cluster = self.refresher.deps.ingest.cluster;
        let write =
            async move { crate::db_writer::write(&writer, RecordTip { cluster, tip }).await };
        ctx.spawn(write.into_actor(self).map(|result, act, ctx| {
            if let Err(e) = &result {
                tracing::debug!(error = %e, "the chain tip was not recorded; the next slot tries again");
            }
            if let Some(next) = act.tips.written(result.is_ok()) {
                act.record_tip(next, ctx);
            }
        }));
    }
}

/// Reconcile now (a pool was just registered); ignored by a follower.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Reconcile;

impl Handler<Reconcile> for ChainSync {
    type Result = ();

    fn handle(&mut self, _: Reconcile, ctx: &mut Self::Context) {
        self.start_refresh(ctx);
    }
}

#[derive(Message)]
#[rtype(result = "SyncStatus")]
pub struct GetSyncStatus;

impl Handler<GetSyncStatus> for ChainSync {
    type Result = MessageResult<GetSyncStatus>;

    fn handle(&mut self, _: GetSyncStatus, _: &mut Self::Context) -> Self::Result {
        MessageResult(self.status.clone())
    }
}

/// The registered pools as read from the chain, and their writes.
struct PoolsRead {
    registered: usize,
    /// The lowest context slot of the reads (u64::MAX when none).
    slot: u64,
    /// The pools found on chain.
    live: Vec<Pubkey>,
    /// Sends the pool writes (together, one batch) and resolves once every
    /// one is committed.
    written: LocalBoxFuture<'static, ActorResult<()>>,
}

impl Refresher {
    /// A reconcile's first step: every registered pool read (one
    /// getMultipleAccounts per 100) and its write planned; the writes go to
    /// the writer when `written` is first polled.
    async fn read_pools(&self) -> ActorResult<PoolsRead> {
        let ChainDeps {
            db,
            chain,
            writer,
            cache,
            ingest,
            ..
        } = &self.deps;
        let registered: Vec<Pubkey> = {
            let client = db.get().await?;
            let rows = client
                .query(queries::LIST_POOL_ADDRESSES, &[&ingest.cluster])
                .await?;
            rows.iter()
                .filter_map(|r| r.get::<_, &str>(0).parse().ok())
                .collect()
        };
        let mut pools = PoolsRead {
            registered: registered.len(),
            slot: u64::MAX,
            live: Vec::new(),
            written: async { Ok(()) }.boxed_local(),
        };
        if registered.is_empty() {
            return Ok(pools);
        }
        let reads = chain
            .send(ReadAccounts {
                keys: registered.clone(),
            })
            .await??;
        let mut pool_writes = Vec::new();
        let mut feeds = std::collections::BTreeSet::new();
        for (key, read) in registered.iter().zip(reads.iter()) {
            pools.slot = pools.slot.min(read.slot);
            let Ok(sync) = ingest.pool(key, read, None, true) else {
                tracing::warn!(pool = %key, "registered pool is missing or not a LendingPool on chain; left as is");
                continue;
            };
            feeds.extend(sync.pool.pyth_price_feed);
            // Sent together: the writer commits them as one batch.
            let (writer, cache) = (writer.clone(), cache.clone());
            pool_writes.push(async move {
                commit(&writer, &cache, sync, Reaches::Queued { heard: None }).await
            });
            pools.live.push(*key);
        }
        let pools_written = futures_util::future::try_join_all(pool_writes);
        // The feeds the pools name (docs/design.md §17), read with them: a
        // feed's stream may have missed what the reconcile brings.
        let feed_writes = match ingest.receiver {
            Some(_) if !feeds.is_empty() => {
                let keys: Vec<Pubkey> = feeds.into_iter().collect();
                let reads = chain.send(ReadAccounts { keys: keys.clone() }).await??;
                let writes: Vec<_> = (keys.iter().zip(reads.iter()))
                    .filter_map(|(key, read)| ingest.feed(key, read, true))
                    .map(|sync| {
                        let (writer, cache) = (writer.clone(), cache.clone());
                        async move {
                            commit(&writer, &cache, sync, Reaches::Queued { heard: None }).await
                        }
                    })
                    .collect();
                futures_util::future::try_join_all(writes).boxed_local()
            }
            _ => async { Ok(Vec::new()) }.boxed_local(),
        };
        pools.written = futures_util::future::try_join(pools_written, feed_writes)
            .map(|written| written.map(|_| ()))
            .boxed_local();
        Ok(pools)
    }

    async fn run(self) -> ActorResult<RefreshReport> {
        let started = Instant::now();
        // 1. Pools. Committed while the scans below are already admitted: the
        // pools' writes are queued first in the index lane, so every position
        // write still commits after them.
        let pools = self.read_pools().await?;
        let mut report = RefreshReport {
            pools: pools.registered,
            slot: pools.slot,
            ..Default::default()
        };
        if pools.registered == 0 {
            report.slot = 0;
            report.took = started.elapsed();
            return Ok(report);
        }
        let Refresher { deps, rpc_timeout } = self;
        let ChainDeps {
            chain,
            writer,
            cache,
            ingest,
            ..
        } = deps;
        let (live, pools_written) = (pools.live, pools.written);

        // 2. Positions of each live pool: a full scan, then upsert and prune.
        // The pools' scans and writes overlap (the RPC gate still admits the
        // scans at max_rps), so a reconcile takes about requests / max_rps, not
        // the sum of every scan and write. The writes go to the writer one pool
        // at a time: queued together they would wait in its lane, or share one
        // transaction, past their time share.
        let one_write = tokio::sync::Mutex::new(());
        let scans = live.into_iter().map(|key| {
            let (chain, writer, cache) = (chain.clone(), writer.clone(), cache.clone());
            let one_write = &one_write;
            async move {
                tracing::debug!(pool = %key, "scanning positions");
                let scan = ScanPoolPositions {
                    program: ingest.program,
                    pool: key,
                    deadline: rpc_timeout * 4,
                };
                let (slot, accounts) = chain.send(scan).await??;
                let scanned = Instant::now();
                let parts = ingest.reconcile(&key, slot, accounts);
                let writing = one_write.lock().await;
                // In order, each its own commit within the write bound; the
                // last removes what the scan no longer found.
                let mut reconciled = Reconciled::default();
                for part in parts {
                    let done =
                        commit(&writer, &cache, part, Reaches::Queued { heard: None }).await?;
                    reconciled.written += done.written;
                    reconciled.removed += done.removed;
                    reconciled.changes.extend(done.changes);
                }
                drop(writing);
                // Where a reconcile's time goes (since it started): the scan's
                // answer, then its rows committed.
                tracing::debug!(
                    pool = %key,
                    scanned_ms = scanned.duration_since(started).as_millis() as u64,
                    written_ms = started.elapsed().as_millis() as u64,
                    written = reconciled.written,
                    changed = reconciled.changes.len(),
                    "pool positions reconciled"
                );
                Ok::<_, ActorError>((slot, reconciled.written, reconciled.removed))
            }
        });
        let scanned = futures_util::stream::iter(scans)
            .buffer_unordered(PARALLEL_SCANS)
            .try_collect::<Vec<(u64, u64, u64)>>();
        let (_, done) = futures_util::future::try_join(pools_written, scanned).await?;
        for (slot, written, removed) in done {
            report.slot = report.slot.min(slot);
            report.positions += written;
            report.removed += removed;
        }
        report.took = started.elapsed();
        Ok(report)
    }
}
