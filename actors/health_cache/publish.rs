//! What the cache sends out after each tick of the change log: each view's
//! engine events go to its feed hub (`feed_hub.rs`), which numbers, sends and
//! keeps them, and the rendered answers they made stale are dropped; and how
//! a subscription reaches a view's hub (docs/design.md §11, §13).

use actix::prelude::*;
use tokio::sync::oneshot;

use super::actor::{HealthCache, not_loaded};
use super::feed_hub::RESUME_WAIT;
use super::messages::Subscribe;
use crate::error::ActorResult;
use crate::feed::subscriber::FeedStream;

impl HealthCache {
    /// After tick `tick` was applied: each view's events to its feed (the
    /// processed view's marked when the tick rolled writes back). True when
    /// the confirmed feed published some.
    pub(super) fn publish_tick(&mut self, tick: u64, rolled_back: bool) -> bool {
        self.views.publish(tick, rolled_back)
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
}
