//! The feed's replay window (docs/design.md §11, §13): the most recent live events,
//! kept as the very frames subscribers were sent (shared `Bytes`, no copy), so
//! a reconnect whose `Last-Event-ID` is inside the window gets exactly the
//! events it missed, in order, and no snapshot. Anything else (another
//! database's epoch, an id older than the window, garbage) is a `reset`.
//!
//! Ids are the same on every replica: a sequence is a tick of the feed's
//! change log times 2^24 plus the event's place among that tick's events, so
//! a replica that joined later numbers the ticks it applies as the others
//! did. Sequences therefore increase but are not consecutive; the window
//! knows how far it is complete (`last`): every tick up to it is applied.

use std::collections::VecDeque;

use bytes::Bytes;

use crate::frame::EventId;
use lendex_engine::FeedEvent;

/// The sequence's layout: ticks in the high bits, places in the low
/// (docs/design.md §11), defined with the wire types: clients read it too.
pub use lendex_wire::events::{TICK_BITS, TICK_EVENTS, tick_end, tick_of, tick_start};

/// A tick's events with their sequences: in owner order (an owner's own
/// events keep theirs), so every replica numbers them alike whatever order
/// its engine found them in. None when the tick has more than it can number.
pub fn number_tick(tick: u64, mut events: Vec<FeedEvent>) -> Option<Vec<(u64, FeedEvent)>> {
    if events.len() > TICK_EVENTS {
        return None;
    }
    events.sort_by_key(FeedEvent::owner);
    Some((tick_start(tick)..).zip(events).collect())
}

/// Frames of increasing events. `ends` holds each event's end in `frames`
/// and `ids` its sequence; the first `dropped` of them were forgotten.
/// Forgetting moves `dropped` on, so a trim costs a search, not a pass over
/// every kept event.
struct Part {
    frames: Bytes,
    ends: Vec<usize>,
    ids: Vec<u64>,
    dropped: usize,
}

impl Part {
    fn last(&self) -> u64 {
        *self.ids.last().expect("parts are never empty")
    }

    /// Where the event at index `i` of `ends` starts.
    fn start_of(&self, i: usize) -> usize {
        if i == 0 { 0 } else { self.ends[i - 1] }
    }

    /// Bytes of the events still kept.
    fn kept(&self) -> usize {
        self.frames.len() - self.start_of(self.dropped)
    }

    /// The frames of the kept events after `seq`.
    fn after(&self, seq: u64) -> Bytes {
        let skip = self.ids[self.dropped..].partition_point(|&id| id <= seq);
        self.frames.slice(self.start_of(self.dropped + skip)..)
    }

    /// Forgets the fewest oldest events that free at least `bytes` (which must
    /// be fewer than it keeps); returns the bytes freed and the last event
    /// forgotten.
    fn forget(&mut self, bytes: usize) -> (usize, u64) {
        let from = self.start_of(self.dropped);
        let k = self.ends[self.dropped..].partition_point(|&end| end - from < bytes) + 1;
        let freed = self.ends[self.dropped + k - 1] - from;
        self.dropped += k;
        (freed, self.ids[self.dropped - 1])
    }
}

/// Why a reconnect cannot resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reset {
    /// Not an id of the form `<epoch>.<sequence>`.
    Malformed,
    /// Another feed's id: another database, or one made anew.
    Epoch,
    /// Older than the oldest event kept (or events since were not kept).
    Window,
    /// A sequence this feed never issued.
    Unknown,
    /// A change this replica had not applied within the wait.
    Late,
}

impl Reset {
    pub fn reason(self) -> &'static str {
        match self {
            Reset::Malformed => "Last-Event-ID is not an event id of this feed",
            Reset::Epoch => "Last-Event-ID is from another epoch (another database's feed)",
            Reset::Window => "Last-Event-ID is older than the replay window (cache.replay_bytes)",
            Reset::Unknown => "Last-Event-ID is ahead of this feed",
            Reset::Late => "Last-Event-ID names a change this replica has not applied yet",
        }
    }

    /// The metrics label.
    pub fn label(self) -> &'static str {
        match self {
            Reset::Malformed => "reset_malformed",
            Reset::Epoch => "reset_epoch",
            Reset::Window => "reset_window",
            Reset::Unknown => "reset_unknown",
            Reset::Late => "reset_late",
        }
    }

    /// The `reset` event: what the subscriber gets before the snapshot.
    pub fn frame(self) -> Bytes {
        Bytes::from(format!(
            "event: reset\ndata: {{\"reason\":\"{}\"}}\n\n",
            self.reason()
        ))
    }
}

/// The window.
pub struct Replay {
    epoch: u64,
    /// How far the feed is complete: the sequence a snapshot taken now
    /// carries (every event up to it was published).
    last: u64,
    /// The oldest id that can resume: every event after it is kept.
    floor: u64,
    parts: VecDeque<Part>,
    /// Bytes of frames kept (what `parts` can hand out).
    kept: usize,
    max_bytes: usize,
}

impl Replay {
    /// An empty window of no feed yet (`restart` names it).
    pub fn new(max_bytes: usize) -> Replay {
        Replay {
            epoch: 0,
            last: 0,
            floor: 0,
            parts: VecDeque::new(),
            kept: 0,
            max_bytes,
        }
    }

    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The feed's position: the id a snapshot taken now carries.
    pub fn last_id(&self) -> EventId {
        EventId {
            epoch: self.epoch,
            seq: self.last,
        }
    }

    /// Starts over at `through` of feed `epoch`, keeping nothing: ids up to
    /// it can no longer resume here (a reload, whose changes are not
    /// numbered).
    pub fn restart(&mut self, epoch: u64, through: u64) {
        self.epoch = epoch;
        self.last = through;
        self.floor = through;
        self.parts.clear();
        self.kept = 0;
    }

    /// The feed is complete up to `through` (ticks applied without events).
    pub fn advance(&mut self, through: u64) {
        self.last = self.last.max(through);
    }

    /// Keeps the frames of events `ids` (increasing, after `last`), each
    /// ending at its `ends`, then forgets the oldest past `max_bytes`.
    pub fn push(&mut self, frames: Bytes, ends: Vec<usize>, ids: Vec<u64>) {
        if ends.is_empty() {
            return;
        }
        debug_assert!(ends.windows(2).all(|w| w[0] <= w[1]) && ends.last() == Some(&frames.len()));
        debug_assert!(ids.len() == ends.len() && ids.windows(2).all(|w| w[0] < w[1]));
        debug_assert!(ids[0] > self.last);
        let part = Part {
            frames,
            ends,
            ids,
            dropped: 0,
        };
        self.last = part.last();
        self.kept += part.frames.len();
        self.parts.push_back(part);
        self.trim();
    }

    /// Forgets the oldest events until at most `max_bytes` are kept; by event,
    /// so a batch larger than the window keeps its newest events.
    fn trim(&mut self) {
        while self.kept > self.max_bytes {
            let excess = self.kept - self.max_bytes;
            let Some(front) = self.parts.front_mut() else {
                break;
            };
            if front.kept() <= excess {
                self.kept -= front.kept();
                self.floor = front.last();
                self.parts.pop_front();
                continue;
            }
            let (freed, last_forgotten) = front.forget(excess);
            self.kept -= freed;
            self.floor = last_forgotten;
            if front.kept() == 0 {
                self.parts.pop_front();
            }
        }
    }

    /// What a reconnect with `last_event_id` is sent: the frames of every event
    /// after it (possibly none), or why it must start over. An id ahead of
    /// `last` is `Unknown` here; the cache first waits for it to be applied.
    pub fn since(&self, last_event_id: &str) -> Result<Vec<Bytes>, Reset> {
        let id = EventId::parse(last_event_id).ok_or(Reset::Malformed)?;
        if id.epoch != self.epoch {
            return Err(Reset::Epoch);
        }
        if id.seq > self.last {
            return Err(Reset::Unknown);
        }
        if id.seq < self.floor {
            return Err(Reset::Window);
        }
        Ok(self
            .parts
            .iter()
            .filter(|part| part.last() > id.seq)
            .map(|part| part.after(id.seq))
            .collect())
    }

    /// Bytes of frames kept.
    pub fn kept_bytes(&self) -> usize {
        self.kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Event `k` has the sequence 30 + 3k: sequences increase with gaps,
    /// as ticks' do (and events 0 to 23 have ids of one length).
    fn seq(k: u64) -> u64 {
        30 + 3 * k
    }

    fn frame(k: u64) -> String {
        format!("id: 7.{}\nevent: e\ndata: {k}\n\n", seq(k))
    }

    fn fresh(max_bytes: usize) -> Replay {
        let mut replay = Replay::new(max_bytes);
        replay.restart(7, 0);
        replay
    }

    /// Pushes events `from..=to` as one part.
    fn push(replay: &mut Replay, from: u64, to: u64) {
        let mut frames = String::new();
        let mut ends = Vec::new();
        for k in from..=to {
            frames.push_str(&frame(k));
            ends.push(frames.len());
        }
        replay.push(Bytes::from(frames), ends, (from..=to).map(seq).collect());
    }

    fn text(parts: Vec<Bytes>) -> String {
        parts
            .iter()
            .map(|b| String::from_utf8(b.to_vec()).unwrap())
            .collect()
    }

    fn expected(from: u64, to: u64) -> String {
        (from..=to).map(frame).collect()
    }

    #[test]
    fn a_reconnect_gets_exactly_what_it_missed() {
        let mut replay = fresh(1 << 20);
        assert_eq!(replay.since("7.0").unwrap(), Vec::<Bytes>::new());
        push(&mut replay, 1, 3);
        push(&mut replay, 4, 4);
        push(&mut replay, 5, 9);
        for seen in 0..=9 {
            // The id itself, and any sequence between it and the next event.
            for id in [seq(seen), seq(seen) + 1, seq(seen) + 2] {
                if id > seq(9) {
                    continue;
                }
                assert_eq!(
                    text(replay.since(&format!("7.{id}")).unwrap()),
                    expected(seen + 1, 9)
                );
            }
        }
        assert_eq!(
            replay.since(&format!("7.{}", seq(9) + 1)),
            Err(Reset::Unknown)
        );
        assert_eq!(replay.since("8.3"), Err(Reset::Epoch));
        assert_eq!(replay.since("garbage"), Err(Reset::Malformed));
        assert_eq!(replay.since(""), Err(Reset::Malformed));
    }

    #[test]
    fn ticks_without_events_move_the_feed_on() {
        let mut replay = fresh(1 << 20);
        push(&mut replay, 1, 2);
        replay.advance(tick_end(5));
        assert_eq!(replay.last_id().seq, tick_end(5));
        // A snapshot of then resumes with what comes after.
        let at = format!("7.{}", tick_end(5));
        assert_eq!(replay.since(&at).unwrap(), Vec::<Bytes>::new());
        let mut frames = String::new();
        let id = tick_start(6);
        frames.push_str(&format!("id: 7.{id}\nevent: e\ndata: x\n\n"));
        let ends = vec![frames.len()];
        replay.push(Bytes::from(frames.clone()), ends, vec![id]);
        assert_eq!(text(replay.since(&at).unwrap()), frames);
        assert_eq!(tick_of(tick_end(5)), 5);
        assert_eq!(tick_of(tick_start(6)), 6);
    }

    #[test]
    fn a_tick_is_numbered_in_owner_order_whatever_the_engine_found_first() {
        use lendex_domain::pubkey::Pubkey;
        let (a, b) = (
            Pubkey::new_from_array([1; 32]),
            Pubkey::new_from_array([2; 32]),
        );
        let found = vec![
            FeedEvent::Update(b, 5),
            FeedEvent::Start(a, 7),
            FeedEvent::Update(b, 4),
        ];
        let numbered = number_tick(9, found).unwrap();
        assert_eq!(
            numbered,
            vec![
                (tick_start(9), FeedEvent::Start(a, 7)),
                (tick_start(9) + 1, FeedEvent::Update(b, 5)),
                (tick_start(9) + 2, FeedEvent::Update(b, 4)),
            ]
        );
        assert!(
            numbered
                .iter()
                .all(|(seq, _)| tick_of(*seq) == 9 && *seq < tick_end(9))
        );
    }

    #[test]
    fn past_the_window_is_a_reset_and_a_big_batch_keeps_its_newest() {
        let size = frame(1).len();
        let mut replay = fresh(size * 4);
        push(&mut replay, 1, 5);
        assert_eq!(replay.kept_bytes(), size * 4);
        assert_eq!(replay.since("7.0"), Err(Reset::Window));
        assert_eq!(
            text(replay.since(&format!("7.{}", seq(1))).unwrap()),
            expected(2, 5)
        );
        push(&mut replay, 6, 7);
        assert_eq!(replay.since(&format!("7.{}", seq(2))), Err(Reset::Window));
        assert_eq!(
            text(replay.since(&format!("7.{}", seq(3))).unwrap()),
            expected(4, 7)
        );
    }

    #[test]
    fn a_restart_ends_every_resume_so_far() {
        let mut replay = fresh(1 << 20);
        push(&mut replay, 1, 3);
        replay.restart(7, tick_end(1));
        for seen in 0..=3 {
            assert_eq!(
                replay.since(&format!("7.{}", seq(seen))),
                Err(Reset::Window)
            );
        }
        // A snapshot taken now carries the restart's position: it resumes.
        assert_eq!(replay.last_id().seq, tick_end(1));
        let at = format!("7.{}", tick_end(1));
        assert_eq!(replay.since(&at).unwrap(), Vec::<Bytes>::new());
    }

    #[test]
    fn the_reset_event_is_sse_with_a_json_reason() {
        for reset in [
            Reset::Malformed,
            Reset::Epoch,
            Reset::Window,
            Reset::Unknown,
            Reset::Late,
        ] {
            let frame = String::from_utf8(reset.frame().to_vec()).unwrap();
            let data = frame
                .strip_prefix("event: reset\ndata: ")
                .and_then(|d| d.strip_suffix("\n\n"))
                .unwrap();
            let json: serde_json::Value = serde_json::from_str(data).unwrap();
            assert_eq!(json["reason"], reset.reason());
        }
    }

    proptest! {
        /// Whatever the batches and the window, a resume is either exactly the
        /// events after the id or a reset, and a reset only when the oldest
        /// missed event is no longer kept.
        #[test]
        fn resumes_are_exact(
            batches in proptest::collection::vec(1u64..6, 1..20),
            window in 1usize..12,
            seen in 0u64..80,
        ) {
            let size = frame(10).len();
            let mut replay = fresh(size * window);
            let mut next = 1;
            for n in batches {
                push(&mut replay, next, next + n - 1);
                next += n;
            }
            let last = next - 1;
            // What is kept is exactly the events after the floor, within the window.
            let after_floor: usize = (1..=last)
                .filter(|k| seq(*k) > replay.floor)
                .map(|k| frame(k).len())
                .sum();
            prop_assert_eq!(replay.kept_bytes(), after_floor);
            prop_assert!(replay.kept_bytes() <= size * window);
            let missed: usize = (seen + 1..=last).map(|k| frame(k).len()).sum();
            match replay.since(&format!("7.{}", seq(seen))) {
                Ok(parts) => {
                    prop_assert!(seen <= last && missed <= size * window);
                    prop_assert_eq!(text(parts), expected(seen + 1, last));
                }
                Err(Reset::Unknown) => prop_assert!(seen > last),
                // Only when the missed events do not fit the window.
                Err(Reset::Window) => prop_assert!(seen < last && missed > size * window),
                Err(other) => prop_assert!(false, "{:?}", other),
            }
        }
    }
}
