//! What the cache sends out: after each tick of the change log, the engine's
//! feed events as numbered frames to every subscriber and into the replay
//! window, and the end of the rendered answers the change made stale; and the
//! start of each subscription (the snapshot, the events a reconnect missed,
//! or a `reset` and the snapshot: docs/design.md §11, §13).

use std::time::{Duration, Instant};

use actix::prelude::*;
use bytes::Bytes;
use tokio::sync::oneshot;

use super::actor::{HealthCache, not_loaded};
use super::messages::Subscribe;
use super::pending::Parked;
use crate::engine::FeedEvent;
use crate::engine::parallel::par_chunks;
use crate::error::ApiResult;
use crate::feed::frame::{EventId, Stamp, write_event};
use crate::feed::poll_answers::now_seconds;
use crate::feed::render::snapshot_frames;
use crate::feed::replay::{Reset, number_tick, tick_end, tick_of};
use crate::feed::subscriber::{FeedStream, Subscriber};

/// How long a reconnect naming a change this replica has not applied waits
/// for it (docs/design.md §13).
const RESUME_WAIT: Duration = Duration::from_secs(2);

/// How often at most subscribers are sent the feed's position alone (an
/// `id:` with no event): ticks without events of theirs move it on, and a
/// reconnect elsewhere resumes from there.
const PROGRESS_EVERY: Duration = Duration::from_millis(500);

/// Unix milliseconds (an event's `published_at_ms`).
fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl HealthCache {
    /// Drops rendered answers the engine's changes made stale.
    fn refresh_rendered(&mut self) {
        if self.engine.version() != self.rendered_version {
            self.rendered_version = self.engine.version();
            self.rendered.forget_answers();
        }
    }

    /// After tick `tick` was applied: its feed events, numbered from the
    /// tick's first sequence in owner order (the same on every replica,
    /// whatever order the engine found them in), sent to every subscriber
    /// and kept for resumes. True when some event was published.
    pub(super) fn publish_tick(&mut self, tick: u64) -> bool {
        self.refresh_rendered();
        let mut events = self.engine.take_events();
        // A start or update of an owner gone in the same tick has nothing to
        // show (its stop follows): no number is spent on it.
        events.retain(|e| {
            matches!(e, FeedEvent::Stop(..) | FeedEvent::Gone(..)) || self.engine.holds(&e.owner())
        });
        if events.is_empty() {
            return false;
        }
        let count = events.len();
        let Some(numbered) = number_tick(tick, events) else {
            tracing::warn!(
                tick,
                events = count,
                "a tick with more events than ids; streams restart"
            );
            self.restart_feed(self.replay.epoch(), tick, true);
            return false;
        };
        let (now, published_at_ms) = (now_seconds(), now_millis());
        let epoch = self.replay.epoch();
        // 25k owners sinking at once is 25k frames: rendered on every core,
        // each core's share into one buffer, each event's end noted (a resume
        // starts at any event).
        let (engine, max_age) = (&self.engine, self.max_oracle_age);
        let parts = par_chunks(&numbered, |part| {
            // Sized from the first frame (a quote with its provenance is over
            // 2 KB): growing a 25 MB buffer by doubling was a tenth of a round.
            let mut out = Vec::with_capacity(4096);
            let mut ends = Vec::with_capacity(part.len());
            let mut ids = Vec::with_capacity(part.len());
            for (i, (seq, event)) in part.iter().enumerate() {
                if i == 1 {
                    out.reserve(out.len().max(2048) * part.len() * 5 / 4);
                }
                let stamp = Stamp {
                    id: EventId { epoch, seq: *seq },
                    published_at_ms,
                };
                if write_event(&mut out, engine, event, stamp, now, max_age) {
                    ends.push(out.len());
                    ids.push(*seq);
                }
            }
            (Bytes::from(out), ends, ids)
        });
        let batch: Vec<Bytes> = parts.iter().map(|(frames, ..)| frames.clone()).collect();
        for (frames, ends, ids) in parts {
            self.replay.push(frames, ends, ids);
        }
        self.offer(&batch);
        true
    }

    /// Sends frames to every subscriber; one too far behind is dropped.
    fn offer(&mut self, batch: &[Bytes]) {
        let before = self.subscribers.len();
        self.subscribers.retain(|s| s.offer(batch));
        self.dropped_subscribers += (before - self.subscribers.len()) as u64;
    }

    /// The feed starts over at `tick` of feed `epoch` (a load, or a tick too
    /// large to number): what led there is not numbered, no id from before
    /// resumes here, and, with `close`, open streams end (their subscribers
    /// reconnect: here they get a reset, on a replica that numbered the
    /// ticks they missed they resume).
    pub(super) fn restart_feed(&mut self, epoch: u64, tick: u64, close: bool) {
        self.engine.take_events();
        self.refresh_rendered();
        self.applied = tick;
        self.replay.restart(epoch, tick_end(tick));
        if close {
            for subscriber in self.subscribers.drain(..) {
                subscriber.close();
            }
        }
    }

    /// Sends the feed's position alone when it moved on since it was last
    /// sent (at most every `PROGRESS_EVERY`), so subscribers hold an id no
    /// older than that to resume from, events or not.
    pub(super) fn announce_progress(&mut self) {
        let last = self.replay.last_id();
        if self.subscribers.is_empty() || last.seq == self.announced.0 {
            return;
        }
        if self
            .announced
            .1
            .is_some_and(|at| at.elapsed() < PROGRESS_EVERY)
        {
            return;
        }
        self.offer(&[Bytes::from(format!("id: {last}\n\n"))]);
        self.announced = (last.seq, Some(Instant::now()));
    }

    /// A new stream. A reconnect naming a change not applied here yet waits
    /// for it (a log read is asked for at once), at most `RESUME_WAIT`.
    pub(super) fn subscribe(
        &mut self,
        ctx: &mut Context<Self>,
        msg: Subscribe,
        reply: oneshot::Sender<ApiResult<FeedStream>>,
    ) {
        if !self.ready {
            let _ = reply.send(Err(not_loaded()));
            return;
        }
        let ahead = msg
            .last_event_id
            .as_deref()
            .and_then(EventId::parse)
            .filter(|id| id.epoch == self.replay.epoch() && id.seq > self.replay.last_id().seq);
        if let Some(id) = ahead
            && !self.streams_closed
        {
            self.parked.push(Parked {
                msg,
                seq: id.seq,
                asked: self.reads,
                until: Instant::now() + RESUME_WAIT,
                reply,
            });
            self.enqueue(ctx, |p| p.read_log = true, None);
            ctx.run_later(RESUME_WAIT, |act, _| act.unpark(false, 0));
            return;
        }
        let _ = reply.send(Ok(self.open(msg, None)));
    }

    /// Answers the parked reconnects that can be: their change applied, or
    /// proven never issued by log read `number` (when `read_log`), or out of
    /// time.
    pub(super) fn unpark(&mut self, read_log: bool, number: u64) {
        if self.parked.is_empty() {
            return;
        }
        let now = Instant::now();
        for parked in std::mem::take(&mut self.parked) {
            let outcome = if parked.seq <= self.replay.last_id().seq || self.streams_closed {
                None
            } else if read_log && number > parked.asked && tick_of(parked.seq) > self.applied {
                Some(Reset::Unknown)
            } else if now >= parked.until {
                Some(Reset::Late)
            } else {
                self.parked.push(parked);
                continue;
            };
            let stream = self.open(parked.msg, outcome);
            let _ = parked.reply.send(Ok(stream));
        }
    }

    /// Opens a stream: the events a reconnect missed, or (a first
    /// connection, or one that cannot resume, after a `reset`) the snapshot.
    fn open(&mut self, msg: Subscribe, reset: Option<Reset>) -> FeedStream {
        let last_event_id = msg.last_event_id.as_deref().map(str::trim);
        let outcome = match (reset, last_event_id.filter(|id| !id.is_empty())) {
            (Some(reset), _) => Err(reset),
            (None, None) => Ok(None),
            (None, Some(id)) => self.replay.since(id).map(Some),
        };
        let prelude = match outcome {
            Ok(None) => vec![self.snapshot()],
            Ok(Some(missed)) => {
                crate::metrics::sse_resumed("resumed");
                missed
            }
            Err(reset) => {
                crate::metrics::sse_resumed(reset.label());
                vec![reset.frame(), self.snapshot()]
            }
        };
        let (subscriber, stream) = Subscriber::new(prelude, self.subscriber_max_lag, msg.socket);
        // Stopping: the prelude, then the stream ends at once (its sender is dropped).
        if !self.streams_closed {
            self.subscribers.push(subscriber);
        }
        stream
    }

    /// A candidate_start for every owner under water, each with the id of the
    /// last live event; shared by subscribers of the same state and second.
    fn snapshot(&mut self) -> Bytes {
        let now = now_seconds();
        let key = (self.engine.version(), self.replay.last_id().seq, now);
        if let Some((at, frames)) = &self.snapshot
            && *at == key
        {
            return frames.clone();
        }
        let stamp = Stamp {
            id: self.replay.last_id(),
            published_at_ms: now_millis(),
        };
        let frames = snapshot_frames(&self.engine, stamp, now, self.max_oracle_age);
        self.snapshot = Some((key, frames.clone()));
        frames
    }
}
