//! What the cache sends out: after each change, the engine's feed events as
//! numbered frames to every subscriber and into the replay window, and the end
//! of the rendered answers the change made stale; and the start of each
//! subscription (the snapshot, the events a reconnect missed, or a `reset`
//! and the snapshot: decisions §11).

use std::time::{Duration, Instant};

use bytes::Bytes;

use super::actor::{HealthCache, not_loaded};
use super::messages::Subscribe;
use crate::engine::FeedEvent;
use crate::engine::frame::{EventId, Stamp, write_event};
use crate::engine::parallel::par_chunks;
use crate::engine::unhealthy::snapshot_frames;
use crate::error::ApiResult;
use crate::feed::rendered::now_seconds;
use crate::feed::subscriber::{FeedStream, Subscriber};

/// Events are kept this long after the last subscriber left: it may be a
/// liquidator restarting, which resumes with its Last-Event-ID. Past that, no
/// frames are rendered for nobody, and ids from before can no longer resume.
const RESUME_GRACE: Duration = Duration::from_secs(300);

/// Unix milliseconds (an event's `published_at_ms`).
fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl HealthCache {
    /// Drops rendered answers the change made stale, then sends the engine's
    /// feed events to every subscriber (and the replay window). True when
    /// some event was published (a frame the freshness histograms can time).
    pub(super) fn publish(&mut self) -> bool {
        if self.engine.version() != self.rendered_version {
            self.rendered_version = self.engine.version();
            self.rendered.forget_answers();
        }
        let mut events = self.engine.take_events();
        // A start or update of an owner gone in the same batch has nothing to
        // show (its stop follows): no number is spent on it.
        events.retain(|e| {
            matches!(e, FeedEvent::Stop(..) | FeedEvent::Gone(..)) || self.engine.holds(&e.owner())
        });
        if events.is_empty() {
            return false;
        }
        let (now, published_at_ms) = (now_seconds(), now_millis());
        let first = self.replay.next_id();
        let numbered: Vec<(u64, FeedEvent)> = (first.seq..).zip(events).collect();
        // 25k owners sinking at once is 25k frames: rendered on every core,
        // each core's share into one buffer, each event's end noted (a resume
        // starts at any event).
        let (engine, max_age) = (&self.engine, self.max_oracle_age);
        let parts = par_chunks(&numbered, |part| {
            // Sized from the first frame (a quote with its provenance is over
            // 2 KB): growing a 25 MB buffer by doubling was a tenth of a round.
            let mut out = Vec::with_capacity(4096);
            let mut ends = Vec::with_capacity(part.len());
            for (i, (seq, event)) in part.iter().enumerate() {
                if i == 1 {
                    out.reserve(out.len().max(2048) * part.len() * 5 / 4);
                }
                let stamp = Stamp {
                    id: EventId {
                        epoch: first.epoch,
                        seq: *seq,
                    },
                    published_at_ms,
                };
                write_event(&mut out, engine, event, stamp, now, max_age);
                ends.push(out.len());
            }
            (Bytes::from(out), ends)
        });
        let batch: Vec<Bytes> = parts.iter().map(|(frames, _)| frames.clone()).collect();
        for (frames, ends) in parts {
            self.replay.push(frames, ends);
        }
        let before = self.subscribers.len();
        self.subscribers.retain(|s| s.offer(&batch));
        self.dropped_subscribers += (before - self.subscribers.len()) as u64;
        self.keep_recording();
        true
    }

    /// The engine keeps feed events while anyone listens, and for
    /// `RESUME_GRACE` after the last one left. When it stops, the replay
    /// window is interrupted: the changes from then on are not in it.
    pub(super) fn keep_recording(&mut self) {
        let now = Instant::now();
        if !self.subscribers.is_empty() {
            self.listened_at = Some(now);
        }
        let on = !self.streams_closed
            && self
                .listened_at
                .is_some_and(|at| now.duration_since(at) < RESUME_GRACE);
        if self.engine.is_recording() && !on {
            self.replay.interrupt();
        }
        self.engine.record_events(on);
    }

    /// A new stream: the events a reconnect missed, or (a first connection, or
    /// one that cannot resume, after a `reset`) the snapshot.
    pub(super) fn subscribe(&mut self, msg: Subscribe) -> ApiResult<FeedStream> {
        if !self.ready {
            return Err(not_loaded());
        }
        let last_event_id = msg.last_event_id.as_deref().map(str::trim);
        let prelude = match last_event_id.filter(|id| !id.is_empty()) {
            None => vec![self.snapshot()],
            Some(id) => match self.replay.since(id) {
                Ok(missed) => {
                    crate::metrics::sse_resumed("resumed");
                    missed
                }
                Err(reset) => {
                    crate::metrics::sse_resumed(reset.label());
                    vec![reset.frame(), self.snapshot()]
                }
            },
        };
        let (subscriber, stream) = Subscriber::new(prelude, self.subscriber_max_lag, msg.socket);
        // Stopping: the prelude, then the stream ends at once (its sender is dropped).
        if !self.streams_closed {
            self.subscribers.push(subscriber);
            self.keep_recording();
        }
        Ok(stream)
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
