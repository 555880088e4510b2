//! How the health cache answers each message (`messages.rs`): a route each,
//! to the actor's method that does the work (`actor.rs`) or to the pipeline
//! that reads the database (`pipeline.rs`).

use actix::prelude::*;
use bytes::Bytes;
use tokio::sync::oneshot;

use super::actor::{HealthCache, not_loaded};
use super::messages::*;
use super::read_queue::{Need, earliest};
use super::write_back::Pace;
use crate::engine::risk::RiskError;
use crate::error::ActorResult;
use crate::leader_lease::LeaderChanged;
use crate::serve::poll_answers::Body;
use crate::serve::subscriber::FeedStream;

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
        self.on_notice(notice, ctx);
    }
}

impl Handler<AwaitListening> for HealthCache {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: AwaitListening, _: &mut Self::Context) -> Self::Result {
        Box::pin(self.await_listening())
    }
}

impl Handler<WrittenBack> for HealthCache {
    type Result = ();

    fn handle(&mut self, msg: WrittenBack, ctx: &mut Self::Context) {
        self.written_back(ctx, msg);
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

impl Handler<OwnerOf> for HealthCache {
    type Result = ResponseActFuture<Self, ActorResult<OwnerPositions>>;

    fn handle(&mut self, OwnerOf(owner, view): OwnerOf, ctx: &mut Self::Context) -> Self::Result {
        match self.knows(&owner, view) {
            Ok(true) => return Box::pin(fut::ready(self.owner_positions(&owner, view))),
            Ok(false) => {}
            Err(e) => return Box::pin(fut::ready(Err(e))),
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
        self.keep_borrows(msg.owner, msg.borrows, msg.generation);
    }
}

impl Handler<BorrowsChanged> for HealthCache {
    type Result = ();

    fn handle(&mut self, msg: BorrowsChanged, _: &mut Self::Context) {
        self.borrows_changed(&msg.0);
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
        self.close_streams();
    }
}

impl Handler<Stats> for HealthCache {
    type Result = MessageResult<Stats>;

    fn handle(&mut self, _: Stats, _: &mut Self::Context) -> Self::Result {
        MessageResult(self.stats())
    }
}

impl Handler<PoolStatus> for HealthCache {
    type Result = ActorResult<Bytes>;

    fn handle(&mut self, _: PoolStatus, _: &mut Self::Context) -> Self::Result {
        self.pool_status()
    }
}

impl Handler<Risk> for HealthCache {
    type Result = ActorResult<Result<Bytes, RiskError>>;

    fn handle(&mut self, Risk(query): Risk, _: &mut Self::Context) -> Self::Result {
        self.risk(query)
    }
}

impl Handler<LeaderChanged> for HealthCache {
    type Result = ();

    fn handle(&mut self, LeaderChanged(leader): LeaderChanged, ctx: &mut Self::Context) {
        self.leader_changed(leader, ctx);
    }
}
