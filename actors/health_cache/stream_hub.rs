//! The stream hub: the liquidators' streams this replica serves, and all the
//! state they need, owned here and nowhere else: the subscribers, the replay
//! window, the reconnects waiting for a change (parked), the shared snapshot,
//! and the feed's last announced position. The cache calls it after each
//! applied tick, with read access to the engine; the hub never calls back
//! (docs/design.md §11, §13).

use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::oneshot;

use super::messages::Subscribe;
use crate::engine::parallel::par_chunks;
use crate::engine::{Engine, FeedEvent};
use crate::error::ActorResult;
use crate::serve::frame::{EventId, Stamp, write_event};
use crate::serve::poll_answers::now_seconds;
use crate::serve::render::snapshot_frames;
use crate::serve::replay::{Replay, Reset, number_tick, tick_end, tick_of};
use crate::serve::subscriber::{FeedStream, Subscriber};

/// How long a reconnect naming a change this replica has not applied waits
/// for it (docs/design.md §13).
pub(super) const RESUME_WAIT: Duration = Duration::from_secs(2);

/// How often at most subscribers are sent the feed's position alone (an
/// `id:` with no event): ticks without events of theirs move it on, and a
/// reconnect elsewhere resumes from there.
const PROGRESS_EVERY: Duration = Duration::from_millis(500);

/// A reconnect waiting for the change its `Last-Event-ID` names.
struct Parked {
    msg: Subscribe,
    seq: u64,
    /// Log reads started when it asked: one started later that found no such
    /// tick proves it was never issued.
    asked: u64,
    until: Instant,
    reply: oneshot::Sender<ActorResult<FeedStream>>,
}

/// What publishing a tick came to.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Published {
    /// No event to send.
    Nothing,
    /// Events numbered, kept and sent.
    Events,
    /// More events than a tick has ids: the feed must start over.
    TooMany,
}

pub(super) struct StreamHub {
    subscribers: Vec<Subscriber>,
    dropped: u64,
    /// Unread live-event bytes one subscriber may hold.
    max_lag: usize,
    /// The last snapshot, by (engine version, last sequence, second).
    snapshot: Option<((u64, u64, i64), Bytes)>,
    replay: Replay,
    parked: Vec<Parked>,
    /// The position last sent alone, and when.
    announced: (u64, Option<Instant>),
    /// Stopping: new streams get their prelude and end.
    closed: bool,
    /// An oracle older than this is stale in the frames (`health.max_oracle_age_seconds`).
    max_oracle_age: i64,
}

/// Unix milliseconds (an event's `published_at_ms`).
fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl StreamHub {
    pub(super) fn new(replay_bytes: usize, max_lag: usize, max_oracle_age: i64) -> StreamHub {
        StreamHub {
            subscribers: Vec::new(),
            dropped: 0,
            max_lag,
            snapshot: None,
            replay: Replay::new(replay_bytes),
            parked: Vec::new(),
            announced: (0, None),
            closed: false,
            max_oracle_age,
        }
    }

    /// The feed's epoch (the database's).
    pub(super) fn epoch(&self) -> u64 {
        self.replay.epoch()
    }

    /// Open streams, and streams dropped for falling behind.
    pub(super) fn counts(&self) -> (usize, u64) {
        (self.subscribers.len(), self.dropped)
    }

    /// Ticks up to `tick` were applied (with or without events).
    pub(super) fn advance_to(&mut self, tick: u64) {
        self.replay.advance(tick_end(tick));
    }

    /// Tick `tick`'s feed events, numbered from the tick's first sequence in
    /// owner order (the same on every replica, whatever order the engine
    /// found them in), sent to every subscriber and kept for resumes;
    /// `rolled_back` marks them all (docs/design.md §15).
    pub(super) fn publish(
        &mut self,
        engine: &Engine,
        tick: u64,
        events: Vec<FeedEvent>,
        rolled_back: bool,
    ) -> Published {
        if events.is_empty() {
            return Published::Nothing;
        }
        let count = events.len();
        let Some(numbered) = number_tick(tick, events) else {
            tracing::warn!(
                tick,
                events = count,
                "a tick with more events than ids; streams restart"
            );
            return Published::TooMany;
        };
        let (now, published_at_ms) = (now_seconds(), now_millis());
        let epoch = self.replay.epoch();
        // 25k owners sinking at once is 25k frames: rendered on every core,
        // each core's share into one buffer, each event's end noted (a resume
        // starts at any event).
        let max_age = self.max_oracle_age;
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
                    rolled_back,
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
        Published::Events
    }

    /// Sends frames to every subscriber; one too far behind is dropped.
    fn offer(&mut self, batch: &[Bytes]) {
        let before = self.subscribers.len();
        self.subscribers.retain(|s| s.offer(batch));
        self.dropped += (before - self.subscribers.len()) as u64;
    }

    /// The feed starts over at `tick` of feed `epoch`: no id from before
    /// resumes here, and, with `close`, open streams end (their subscribers
    /// reconnect: here they get a reset, on a replica that numbered the ticks
    /// they missed they resume).
    pub(super) fn restart(&mut self, epoch: u64, tick: u64, close: bool) {
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

    /// Lets go of the subscribers that hung up (at once, not at the next event).
    pub(super) fn prune_closed(&mut self) {
        self.subscribers.retain(|s| !s.is_closed());
    }

    /// Stopping: every stream ends, and new ones get only their prelude.
    pub(super) fn close_streams(&mut self) {
        self.closed = true;
        for subscriber in self.subscribers.drain(..) {
            subscriber.close();
        }
    }

    /// A new stream. One naming a change not applied here yet waits for it
    /// (until `RESUME_WAIT`); true when it was parked so (the caller asks for
    /// a log read, and unparks after the wait), false when it was answered.
    pub(super) fn subscribe(
        &mut self,
        engine: &Engine,
        msg: Subscribe,
        reads_started: u64,
        reply: oneshot::Sender<ActorResult<FeedStream>>,
    ) -> bool {
        let ahead = msg
            .last_event_id
            .as_deref()
            .and_then(EventId::parse)
            .filter(|id| id.epoch == self.replay.epoch() && id.seq > self.replay.last_id().seq);
        if let Some(id) = ahead
            && !self.closed
        {
            self.parked.push(Parked {
                msg,
                seq: id.seq,
                asked: reads_started,
                until: Instant::now() + RESUME_WAIT,
                reply,
            });
            return true;
        }
        let _ = reply.send(Ok(self.open(engine, msg, None)));
        false
    }

    /// Answers the parked reconnects that can be: their change applied, or
    /// proven never issued by log read `number` (when `read_log`: the engine
    /// then holds every tick up to `applied`), or out of time.
    pub(super) fn unpark(&mut self, engine: &Engine, read_log: bool, number: u64, applied: u64) {
        if self.parked.is_empty() {
            return;
        }
        let now = Instant::now();
        for parked in std::mem::take(&mut self.parked) {
            let outcome = if parked.seq <= self.replay.last_id().seq || self.closed {
                None
            } else if read_log && number > parked.asked && tick_of(parked.seq) > applied {
                Some(Reset::Unknown)
            } else if now >= parked.until {
                Some(Reset::Late)
            } else {
                self.parked.push(parked);
                continue;
            };
            let stream = self.open(engine, parked.msg, outcome);
            let _ = parked.reply.send(Ok(stream));
        }
    }

    /// Opens a stream: the events a reconnect missed, or (a first
    /// connection, or one that cannot resume, after a `reset`) the snapshot.
    fn open(&mut self, engine: &Engine, msg: Subscribe, reset: Option<Reset>) -> FeedStream {
        let last_event_id = msg.last_event_id.as_deref().map(str::trim);
        let outcome = match (reset, last_event_id.filter(|id| !id.is_empty())) {
            (Some(reset), _) => Err(reset),
            (None, None) => Ok(None),
            (None, Some(id)) => self.replay.since(id).map(Some),
        };
        let prelude = match outcome {
            Ok(None) => vec![self.snapshot(engine)],
            Ok(Some(missed)) => {
                crate::metrics::sse_resumed("resumed");
                missed
            }
            Err(reset) => {
                crate::metrics::sse_resumed(reset.label());
                vec![reset.frame(), self.snapshot(engine)]
            }
        };
        let (subscriber, stream) = Subscriber::new(prelude, self.max_lag, msg.socket);
        // Stopping: the prelude, then the stream ends at once (its sender is dropped).
        if !self.closed {
            self.subscribers.push(subscriber);
        }
        stream
    }

    /// A candidate_start for every owner under water, each with the id of the
    /// last live event; shared by subscribers of the same state and second.
    fn snapshot(&mut self, engine: &Engine) -> Bytes {
        let now = now_seconds();
        let key = (engine.version(), self.replay.last_id().seq, now);
        if let Some((at, frames)) = &self.snapshot
            && *at == key
        {
            return frames.clone();
        }
        let stamp = Stamp {
            id: self.replay.last_id(),
            published_at_ms: now_millis(),
            rolled_back: false,
        };
        let frames = snapshot_frames(engine, stamp, now, self.max_oracle_age);
        self.snapshot = Some((key, frames.clone()));
        frames
    }
}
