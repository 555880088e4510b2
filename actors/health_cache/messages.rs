//! What the rest of the service can ask of the health cache, and the answers.

use actix::prelude::*;
use actix_web::web::Bytes;
use serde::Serialize;
use tokio::sync::oneshot;

use super::actor::{Borrows, HealthCache};
use super::engine::{Held, PoolEntry, PositionState};
use super::feed::{self, Answer, OwnerBody};
use super::subscriber::{FeedStream, Subscriber};
use crate::domain::pubkey::Pubkey;
use crate::error::{ApiError, ApiResult};

/// Loads every pool and position of the cluster; answers once applied (or failed:
/// the reload is then retried in the background).
#[derive(Message)]
#[rtype(result = "ApiResult<()>")]
pub struct LoadAll;

impl Handler<LoadAll> for HealthCache {
    type Result = ResponseFuture<ApiResult<()>>;

    fn handle(&mut self, _: LoadAll, ctx: &mut Self::Context) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.enqueue(ctx, |p| p.reload_all = true, Some(tx));
        Box::pin(async move { rx.await.unwrap_or(Err(ApiError::Internal)) })
    }
}

/// Owners and pools whose rows changed, from the LISTEN connection or from this
/// replica's own writes. Answers once the change is applied, so a writer that
/// awaits it reads its own write from this replica; with `write_through`, only
/// once the resulting health factors are committed to `positions` too.
#[derive(Message)]
#[rtype(result = "ApiResult<()>")]
pub struct Changed {
    pub owners: Vec<Pubkey>,
    pub pools: Vec<Pubkey>,
    pub write_through: bool,
}

impl Handler<Changed> for HealthCache {
    type Result = ResponseFuture<ApiResult<()>>;

    fn handle(&mut self, msg: Changed, ctx: &mut Self::Context) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.enqueue(
            ctx,
            |p| {
                p.owners.extend(msg.owners);
                p.pools.extend(msg.pools);
                p.write_through |= msg.write_through;
            },
            Some(tx),
        );
        Box::pin(async move { rx.await.unwrap_or(Err(ApiError::Internal)) })
    }
}

/// Reload everything, and forget every borrow list (after a lost LISTEN
/// connection: changes may have been missed).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Resync;

impl Handler<Resync> for HealthCache {
    type Result = ();

    fn handle(&mut self, _: Resync, ctx: &mut Self::Context) {
        self.borrows.clear();
        self.borrow_generation += 1;
        self.enqueue(ctx, |p| p.reload_all = true, None);
    }
}

/// Whether the LISTEN connection is up (health reports a cache that may miss changes).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Listening(pub bool);

impl Handler<Listening> for HealthCache {
    type Result = ();

    fn handle(&mut self, msg: Listening, ctx: &mut Self::Context) {
        self.listening = msg.0;
        if !msg.0 {
            return;
        }
        for waiter in self.listening_waiters.drain(..) {
            let _ = waiter.send(());
        }
        // The first LISTEN came up after a load had begun (start stopped waiting
        // for it): what was committed in between is unknown. Later reconnects
        // reload on their own (listen.rs).
        let first = !std::mem::replace(&mut self.listened, true);
        if first && (self.ready || self.fetching) {
            ctx.notify(Resync);
        }
    }
}

/// Resolves once the LISTEN connection is up. The first load starts after it: a
/// change committed between the load's read and the first LISTEN would
/// otherwise never reach the cache (only later reconnects reload everything).
#[derive(Message)]
#[rtype(result = "()")]
pub struct AwaitListening;

impl Handler<AwaitListening> for HealthCache {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: AwaitListening, _: &mut Self::Context) -> Self::Result {
        if self.listening {
            return Box::pin(async {});
        }
        let (tx, rx) = oneshot::channel();
        self.listening_waiters.push(tx);
        Box::pin(async move {
            let _ = rx.await;
        })
    }
}

/// The outcome of a write-back: stored, or to be written again.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct WrittenBack {
    pub batch: std::collections::HashMap<Pubkey, u128, foldhash::fast::RandomState>,
    pub ok: bool,
}

impl Handler<WrittenBack> for HealthCache {
    type Result = ();

    fn handle(&mut self, msg: WrittenBack, ctx: &mut Self::Context) {
        self.engine.written(msg.batch, msg.ok);
        self.after_write_back(ctx, msg.ok);
    }
}

/// Writes every pending health factor now and answers once committed (shutdown
/// flushes the cache's queued writes this way before draining the writer).
#[derive(Message)]
#[rtype(result = "()")]
pub struct FlushWrites;

impl Handler<FlushWrites> for HealthCache {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: FlushWrites, ctx: &mut Self::Context) -> Self::Result {
        Box::pin(self.write_back(ctx))
    }
}

/// A feed answer (unhealthy, liquidations, at-risk) that was not rendered yet for
/// this change and second: rendered here, then shared with every reader.
#[derive(Message)]
#[rtype(result = "ApiResult<Bytes>")]
pub struct Render(pub Answer);

impl Handler<Render> for HealthCache {
    type Result = ApiResult<Bytes>;

    fn handle(&mut self, Render(answer): Render, _: &mut Self::Context) -> Self::Result {
        self.render(answer)
    }
}

/// An owner's positions with what readers need of their pools, newest sync first
/// (GET /api/positions/{user} and /detail).
#[derive(Message)]
#[rtype(result = "ApiResult<OwnerPositions>")]
pub struct OwnerOf(pub Pubkey);

#[derive(Debug, Clone)]
pub struct OwnerPositions {
    pub health_factor: u128,
    pub rows: Vec<OwnerRow>,
    /// The wallet's recent borrows when held in memory; else the reader loads
    /// them and hands them back with `KeepBorrows` and this generation.
    pub borrows: Option<Borrows>,
    pub borrow_generation: u64,
    /// The generation of rendered owner bodies this was read at (`keep_owner_body`).
    pub body_generation: u64,
}

#[derive(Debug, Clone)]
pub struct OwnerRow {
    pub position: PositionState,
    pub symbol: Option<String>,
    pub deposit_index_wad: u128,
    pub borrow_index_wad: u128,
    pub supply_apy: f64,
    pub borrow_apy: f64,
}

impl OwnerRow {
    fn new(position: &Held, pool: &PoolEntry) -> Self {
        OwnerRow {
            position: position.state(pool.state.address),
            symbol: pool.state.symbol.clone(),
            deposit_index_wad: pool.state.pricing.deposit_index_wad,
            borrow_index_wad: pool.state.pricing.borrow_index_wad,
            supply_apy: pool.supply_apy,
            borrow_apy: pool.borrow_apy,
        }
    }
}

impl HealthCache {
    fn owner_positions(&mut self, owner: &Pubkey) -> OwnerPositions {
        let borrows = self.borrows.get(owner).cloned();
        let (health_factor, rows) = match self.engine.view(owner) {
            None => (u128::MAX, Vec::new()),
            Some(view) => (
                view.health_factor,
                view.positions
                    .iter()
                    .map(|(p, pool)| OwnerRow::new(p, pool))
                    .collect(),
            ),
        };
        OwnerPositions {
            health_factor,
            rows,
            borrows,
            borrow_generation: self.borrow_generation,
            body_generation: feed::owner_generation(&self.rendered),
        }
    }
}

impl Handler<OwnerOf> for HealthCache {
    type Result = ResponseActFuture<Self, ApiResult<OwnerPositions>>;

    fn handle(&mut self, OwnerOf(owner): OwnerOf, ctx: &mut Self::Context) -> Self::Result {
        if !self.ready {
            return Box::pin(fut::ready(Err(ApiError::DatabaseUnavailable)));
        }
        if self.engine.knows(&owner) {
            return Box::pin(fut::ready(Ok(self.owner_positions(&owner))));
        }
        // Evicted: load the owner back through the pipeline, then answer.
        let (tx, rx) = oneshot::channel();
        self.enqueue(
            ctx,
            |p| {
                p.owners.insert(owner);
            },
            Some(tx),
        );
        Box::pin(
            async move { rx.await.unwrap_or(Err(ApiError::Internal)) }
                .into_actor(self)
                .map(move |loaded, act, _| {
                    loaded?;
                    Ok(act.owner_positions(&owner))
                }),
        )
    }
}

/// A wallet's recent borrows as just read from the database, kept unless a
/// borrow was written since the read started.
#[derive(Message)]
#[rtype(result = "()")]
pub struct KeepBorrows {
    pub owner: Pubkey,
    pub generation: u64,
    pub borrows: Borrows,
}

impl Handler<KeepBorrows> for HealthCache {
    type Result = ();

    fn handle(&mut self, msg: KeepBorrows, _: &mut Self::Context) {
        if msg.generation == self.borrow_generation {
            self.borrows.put(msg.owner, msg.borrows);
        }
    }
}

/// Borrows of these wallets were written: their cached lists are stale. This
/// replica's writer sends it after COMMIT (read-your-writes); the others get it
/// through NOTIFY.
#[derive(Message)]
#[rtype(result = "()")]
pub struct BorrowsChanged(pub Vec<Pubkey>);

impl Handler<BorrowsChanged> for HealthCache {
    type Result = ();

    fn handle(&mut self, msg: BorrowsChanged, _: &mut Self::Context) {
        self.borrow_generation += 1;
        feed::forget_owner_bodies(&self.rendered, Some(msg.0.iter()), &[OwnerBody::Detail]);
        for owner in msg.0 {
            self.borrows.pop(&owner);
        }
    }
}

/// Subscribe to the liquidation feed: a candidate_start for every owner already
/// under water (all of them, whatever their number), then live events; the
/// answer is the response body.
#[derive(Message)]
#[rtype(result = "ApiResult<FeedStream>")]
pub struct Subscribe;

impl Handler<Subscribe> for HealthCache {
    type Result = ApiResult<FeedStream>;

    fn handle(&mut self, _: Subscribe, _: &mut Self::Context) -> Self::Result {
        if !self.ready {
            return Err(ApiError::DatabaseUnavailable);
        }
        let now = feed::now_seconds();
        let version = self.engine.version();
        let snapshot = match &self.snapshot {
            Some((v, at, frames)) if *v == version && *at == now => frames.clone(),
            _ => {
                let frames = feed::snapshot_frames(&self.engine, now, self.max_oracle_age);
                self.snapshot = Some((version, now, frames.clone()));
                frames
            }
        };
        let (subscriber, stream) = Subscriber::new(snapshot, self.subscriber_max_lag);
        // Stopping: the snapshot, then the stream ends at once (its sender is dropped).
        if !self.streams_closed {
            self.subscribers.push(subscriber);
            self.engine.record_events(true);
        }
        Ok(stream)
    }
}

/// The service is stopping: every feed stream ends (their queues are dropped),
/// so a graceful stop does not wait its whole timeout for them.
#[derive(Message)]
#[rtype(result = "()")]
pub struct CloseStreams;

impl Handler<CloseStreams> for HealthCache {
    type Result = ();

    fn handle(&mut self, _: CloseStreams, _: &mut Self::Context) {
        self.streams_closed = true;
        self.subscribers.clear();
        self.engine.record_events(false);
    }
}

/// Counts for logs, health and benchmarks.
#[derive(Message)]
#[rtype(result = "CacheStats")]
pub struct Stats;

#[derive(Debug, Clone, Serialize)]
pub struct CacheStats {
    pub ready: bool,
    /// The LISTEN connection is up (else changes by others may be missed).
    pub listening: bool,
    pub pools: usize,
    pub owners: usize,
    pub unhealthy_owners: usize,
    pub watched_owners: usize,
    pub evictions: u64,
    pub subscribers: usize,
    pub dropped_subscribers: u64,
    pub feed_version: u64,
}

impl Handler<Stats> for HealthCache {
    type Result = MessageResult<Stats>;

    fn handle(&mut self, _: Stats, _: &mut Self::Context) -> Self::Result {
        MessageResult(CacheStats {
            ready: self.ready,
            listening: self.listening,
            pools: self.engine.pool_count(),
            owners: self.engine.owner_count(),
            unhealthy_owners: self.engine.unhealthy_count(),
            watched_owners: self.engine.watched_count(),
            evictions: self.engine.evictions(),
            subscribers: self.subscribers.len(),
            dropped_subscribers: self.dropped_subscribers,
            feed_version: self.engine.version(),
        })
    }
}
