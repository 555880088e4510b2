//! How the health cache answers each message (`messages.rs`): thin, each one
//! handing the work to the actor's pipeline (`actor.rs`) or the engine.

use actix::prelude::*;
use bytes::Bytes;
use tokio::sync::oneshot;

use super::actor::{HealthCache, not_loaded};
use super::messages::*;
use super::read_queue::{Need, earliest};
use super::write_back::Pace;
use crate::domain::forks::Commitment;
use crate::domain::pubkey::Pubkey;
use crate::domain::risk::LiquidationPrice;
use crate::engine::risk::{self, RiskError, liquidation_prices};
use crate::engine::{Held, PoolEntry};
use crate::error::ActorResult;
use crate::feed::poll_answers::{Body, now_seconds};
use crate::feed::render;
use crate::feed::subscriber::FeedStream;
use lendex_store::listen::Notice;

impl Handler<LoadAll> for HealthCache {
    type Result = ResponseFuture<ActorResult<()>>;

    fn handle(&mut self, _: LoadAll, ctx: &mut Self::Context) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.enqueue(ctx, |p| p.reload_all = true, Some((Need::Reload, tx)));
        Box::pin(async move { rx.await? })
    }
}

impl Handler<CatchUp> for HealthCache {
    type Result = ResponseFuture<ActorResult<()>>;

    fn handle(&mut self, msg: CatchUp, ctx: &mut Self::Context) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.enqueue(
            ctx,
            |p| {
                p.read_log = true;
                p.write_through |= msg.write_through;
                p.chain_heard = earliest(p.chain_heard, msg.chain_heard);
            },
            Some((Need::Log, tx)),
        );
        Box::pin(async move { rx.await? })
    }
}

impl Handler<DatabaseNotice> for HealthCache {
    type Result = ();

    fn handle(&mut self, DatabaseNotice(notice): DatabaseNotice, ctx: &mut Self::Context) {
        match notice {
            Notice::Listening(up) => self.listening_is(up, ctx),
            Notice::Resync => self.resync(ctx),
            Notice::Ticked { tick, heard } => {
                if tick > self.applied || !self.ready {
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
            Notice::BorrowsChanged(owners) => self.borrows_changed(owners),
        }
    }
}

impl HealthCache {
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
        if first && (self.ready || self.reads.running()) {
            self.resync(ctx);
        }
    }

    /// Borrows of these wallets were written: their cached lists are stale.
    fn borrows_changed(&mut self, owners: Vec<Pubkey>) {
        for view in self.views.iter() {
            view.forget_details(&owners);
        }
        self.borrows.changed(&owners);
    }
}

impl Handler<AwaitListening> for HealthCache {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: AwaitListening, _: &mut Self::Context) -> Self::Result {
        let waiting = self.listening.wait();
        Box::pin(async move {
            if let Some(up) = waiting {
                let _ = up.await;
            }
        })
    }
}

impl Handler<WrittenBack> for HealthCache {
    type Result = ();

    fn handle(&mut self, msg: WrittenBack, ctx: &mut Self::Context) {
        self.engine_mut().written(msg.batch, msg.ok);
        self.after_write_back(ctx, msg.ok);
    }
}

impl Handler<FlushWrites> for HealthCache {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: FlushWrites, ctx: &mut Self::Context) -> Self::Result {
        Box::pin(self.write_back(ctx, Pace::Urgent))
    }
}

impl Handler<Render> for HealthCache {
    type Result = ActorResult<Body>;

    fn handle(&mut self, Render(answer, view): Render, _: &mut Self::Context) -> Self::Result {
        self.render(answer, view)
    }
}

impl OwnerRow {
    fn new(
        position: &Held,
        pool: &PoolEntry,
        liquidation_price: Option<(LiquidationPrice, i32)>,
    ) -> Self {
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
}

impl HealthCache {
    fn owner_positions(&mut self, owner: &Pubkey, view: Commitment) -> ActorResult<OwnerPositions> {
        let (borrows, borrow_generation) = self.borrows.get(owner);
        let view = self.views.get_mut(view)?;
        let body_generation = view.rendered().owner_generation();
        let (health_factor, rows) = match view.engine_mut().view(owner) {
            None => (u128::MAX, Vec::new()),
            Some(view) => (
                view.health_factor,
                view.positions
                    .iter()
                    .zip(liquidation_prices(&view))
                    .map(|((p, pool), lp)| OwnerRow::new(p, pool, lp))
                    .collect(),
            ),
        };
        Ok(OwnerPositions {
            health_factor,
            rows,
            borrows,
            borrow_generation,
            body_generation,
        })
    }
}

impl Handler<OwnerOf> for HealthCache {
    type Result = ResponseActFuture<Self, ActorResult<OwnerPositions>>;

    fn handle(&mut self, OwnerOf(owner, view): OwnerOf, ctx: &mut Self::Context) -> Self::Result {
        if !self.ready {
            return Box::pin(fut::ready(Err(not_loaded())));
        }
        let engine = match self.views.get(view) {
            Ok(view) => view.engine(),
            Err(e) => return Box::pin(fut::ready(Err(e))),
        };
        if engine.knows(&owner) {
            return Box::pin(fut::ready(self.owner_positions(&owner, view)));
        }
        // Evicted: load the owner back through the pipeline, then answer.
        let (tx, rx) = oneshot::channel();
        self.enqueue(
            ctx,
            |p| {
                p.owners.insert(owner);
            },
            Some((Need::Owners, tx)),
        );
        Box::pin(
            async move { rx.await? }
                .into_actor(self)
                .map(move |loaded, act, _| {
                    loaded?;
                    act.owner_positions(&owner, view)
                }),
        )
    }
}

impl Handler<KeepBorrows> for HealthCache {
    type Result = ();

    fn handle(&mut self, msg: KeepBorrows, _: &mut Self::Context) {
        self.borrows.keep(msg.owner, msg.borrows, msg.generation);
    }
}

impl Handler<BorrowsChanged> for HealthCache {
    type Result = ();

    fn handle(&mut self, msg: BorrowsChanged, _: &mut Self::Context) {
        self.borrows_changed(msg.0);
    }
}

impl Handler<Subscribe> for HealthCache {
    type Result = ResponseFuture<ActorResult<FeedStream>>;

    fn handle(&mut self, msg: Subscribe, ctx: &mut Self::Context) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.subscribe(ctx, msg, tx);
        Box::pin(async move { rx.await.unwrap_or_else(|_| Err(not_loaded())) })
    }
}

impl Handler<CloseStreams> for HealthCache {
    type Result = ();

    fn handle(&mut self, _: CloseStreams, _: &mut Self::Context) {
        for view in self.views.iter_mut() {
            view.feed_mut().close_streams();
        }
        self.unpark(false, 0);
    }
}

impl Handler<Stats> for HealthCache {
    type Result = MessageResult<Stats>;

    fn handle(&mut self, _: Stats, _: &mut Self::Context) -> Self::Result {
        let confirmed = self.views.confirmed();
        let (engine, (subscribers, dropped_subscribers)) =
            (confirmed.engine(), confirmed.feed().counts());
        MessageResult(CacheStats {
            ready: self.ready,
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
        })
    }
}

impl Handler<PoolStatus> for HealthCache {
    type Result = ActorResult<Bytes>;

    fn handle(&mut self, _: PoolStatus, _: &mut Self::Context) -> Self::Result {
        if !self.ready {
            return Err(not_loaded());
        }
        let served = crate::engine::pool_status::Served {
            cluster: self.cluster,
            explorer_query: &self.explorer_query,
        };
        Ok(render::json(&crate::engine::pool_status::pool_status(
            self.engine(),
            now_seconds(),
            self.max_oracle_age,
            served,
        )))
    }
}

impl Handler<Risk> for HealthCache {
    type Result = ActorResult<Result<Bytes, RiskError>>;

    fn handle(&mut self, Risk(query): Risk, _: &mut Self::Context) -> Self::Result {
        if !self.ready {
            return Err(not_loaded());
        }
        let body = match query {
            RiskQuery::Shock { shocks, limit } => risk::shock_response(
                self.engine(),
                &shocks,
                limit,
                now_seconds(),
                self.max_oracle_age,
            )
            .map(|answer| render::json(&answer)),
            RiskQuery::Curve {
                pool,
                from_bps,
                to_bps,
                steps,
            } => risk::curve_response(self.engine(), &pool, from_bps, to_bps, steps)
                .map(|answer| render::json(&answer)),
        };
        Ok(body)
    }
}
