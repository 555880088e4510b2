//! What the cache sends out after each tick of the change log: the rendered
//! answers the change made stale are dropped, and the engine's feed events go
//! to the feed hub (`feed_hub.rs`), which numbers, sends and keeps them; and
//! how a subscription reaches the hub (docs/design.md §11, §13).

use actix::prelude::*;
use tokio::sync::oneshot;

use super::actor::{HealthCache, not_loaded};
use super::feed_hub::{Published, RESUME_WAIT};
use super::messages::Subscribe;
use crate::domain::forks::Commitment;
use crate::engine::FeedEvent;
use crate::error::ActorResult;
use crate::feed::subscriber::FeedStream;

impl HealthCache {
    /// Drops rendered answers the engine's changes made stale.
    fn refresh_rendered(&mut self) {
        if self.engine.version() != self.rendered_version {
            self.rendered_version = self.engine.version();
            self.rendered.forget_answers();
        }
    }

    /// After tick `tick` was applied: its feed events to the hub. True when
    /// some event was published.
    pub(super) fn publish_tick(&mut self, tick: u64) -> bool {
        self.refresh_rendered();
        let mut events = self.engine.take_events();
        // A start or update of an owner gone in the same tick has nothing to
        // show (its stop follows): no number is spent on it.
        events.retain(|e| {
            matches!(e, FeedEvent::Stop(..) | FeedEvent::Gone(..)) || self.engine.holds(&e.owner())
        });
        match self.feed.publish(&self.engine, tick, events, false) {
            Published::Events => true,
            Published::Nothing => false,
            Published::TooMany => {
                let epoch = self.feed.epoch();
                self.restart_feed(epoch, tick, true);
                false
            }
        }
    }

    /// The feed starts over at `tick` of feed `epoch` (a load, or a tick too
    /// large to number): what led there is not numbered, and with `close`
    /// open streams end.
    pub(super) fn restart_feed(&mut self, epoch: u64, tick: u64, close: bool) {
        self.engine.take_events();
        self.refresh_rendered();
        self.applied = tick;
        self.feed.restart(epoch, tick, close);
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
        let parked = match (msg.view, &mut self.processed) {
            (Commitment::Processed, Some(p)) => {
                p.feed.subscribe(p.view.engine(), msg, started, reply)
            }
            (Commitment::Processed, None) => {
                let why = "the processed view is not served here";
                let _ = reply.send(Err(crate::error::ActorError::internal(why)));
                false
            }
            (Commitment::Confirmed, _) => self.feed.subscribe(&self.engine, msg, started, reply),
        };
        if parked {
            self.enqueue(ctx, |p| p.read_log = true, None);
            ctx.run_later(RESUME_WAIT, |act, _| act.unpark(false, 0));
        }
    }

    /// Answers the parked reconnects that can be (after log read `number`
    /// when `read_log`).
    pub(super) fn unpark(&mut self, read_log: bool, number: u64) {
        self.feed
            .unpark(&self.engine, read_log, number, self.applied);
        if let Some(p) = &mut self.processed {
            p.feed
                .unpark(p.view.engine(), read_log, number, self.applied);
        }
    }
}
