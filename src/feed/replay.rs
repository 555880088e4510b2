//! The feed's replay window (decisions §11): the most recent live events, kept
//! as the very frames subscribers were sent (shared `Bytes`, no copy), so a
//! reconnect whose `Last-Event-ID` is inside the window gets exactly the
//! events it missed, in order, and no snapshot. Anything else (another
//! process's epoch, an id older than the window, garbage) is a `reset`.
//!
//! Events are numbered one more per live event. When the cache stops keeping
//! events (nobody has listened for a while), the numbering skips one and the
//! window empties: no id from before can resume across changes never kept.

use std::collections::VecDeque;

use bytes::Bytes;

use crate::engine::frame::EventId;

/// Frames of consecutive events. `ends` holds each event's end in `frames`;
/// the first `dropped` of them were forgotten, and event `first + i` is the
/// one ending at `ends[dropped + i]`. Forgetting moves `dropped` on, so a trim
/// costs a search, not a pass over every kept event.
struct Part {
    first: u64,
    frames: Bytes,
    ends: Vec<usize>,
    dropped: usize,
}

impl Part {
    fn last(&self) -> u64 {
        self.first + (self.ends.len() - self.dropped) as u64 - 1
    }

    /// Where the event at index `i` of `ends` starts.
    fn start_of(&self, i: usize) -> usize {
        if i == 0 { 0 } else { self.ends[i - 1] }
    }

    /// Bytes of the events still kept.
    fn kept(&self) -> usize {
        self.frames.len() - self.start_of(self.dropped)
    }

    /// The frames of the events after `seq` (which is at or after `first - 1`).
    fn after(&self, seq: u64) -> Bytes {
        let skip = (seq + 1 - self.first) as usize;
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
        self.first += k as u64;
        (freed, self.first - 1)
    }
}

/// Why a reconnect cannot resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reset {
    /// Not an id of the form `<epoch>.<sequence>`.
    Malformed,
    /// Another process's id: this one restarted, or it is another replica.
    Epoch,
    /// Older than the oldest event kept (or events since were not kept).
    Window,
    /// A sequence this process has not reached.
    Unknown,
}

impl Reset {
    pub fn reason(self) -> &'static str {
        match self {
            Reset::Malformed => "Last-Event-ID is not an event id of this feed",
            Reset::Epoch => {
                "Last-Event-ID is from another epoch (the service restarted, or another replica)"
            }
            Reset::Window => "Last-Event-ID is older than the replay window (cache.replay_bytes)",
            Reset::Unknown => "Last-Event-ID is ahead of this feed",
        }
    }

    /// The metrics label.
    pub fn label(self) -> &'static str {
        match self {
            Reset::Malformed => "reset_malformed",
            Reset::Epoch => "reset_epoch",
            Reset::Window => "reset_window",
            Reset::Unknown => "reset_unknown",
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
    /// The sequence of the last live event (0 before the first).
    last: u64,
    /// The oldest id that can resume: every event after it is kept.
    floor: u64,
    parts: VecDeque<Part>,
    /// Bytes of frames kept (what `parts` can hand out).
    kept: usize,
    max_bytes: usize,
}

impl Replay {
    pub fn new(epoch: u64, max_bytes: usize) -> Replay {
        Replay {
            epoch,
            last: 0,
            floor: 0,
            parts: VecDeque::new(),
            kept: 0,
            max_bytes,
        }
    }

    /// The id of the last live event: the one a snapshot taken now carries.
    pub fn last_id(&self) -> EventId {
        EventId {
            epoch: self.epoch,
            seq: self.last,
        }
    }

    /// The id the next live event gets (`n` after it: `next_id().seq + n`).
    pub fn next_id(&self) -> EventId {
        EventId {
            epoch: self.epoch,
            seq: self.last + 1,
        }
    }

    /// Keeps the frames of the next `ends.len()` events (numbered from
    /// `next_id`), then forgets the oldest past `max_bytes`.
    pub fn push(&mut self, frames: Bytes, ends: Vec<usize>) {
        if ends.is_empty() {
            return;
        }
        debug_assert!(ends.windows(2).all(|w| w[0] <= w[1]) && ends.last() == Some(&frames.len()));
        let part = Part {
            first: self.last + 1,
            frames,
            ends,
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

    /// Changes happen that are not kept: ids so far can no longer resume.
    pub fn interrupt(&mut self) {
        self.last += 1;
        self.floor = self.last;
        self.parts.clear();
        self.kept = 0;
    }

    /// What a reconnect with `last_event_id` is sent: the frames of every event
    /// after it (possibly none), or why it must start over.
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
            .map(|part| part.after(id.seq.max(part.first - 1)))
            .collect())
    }

    /// Bytes of frames kept.
    pub fn kept_bytes(&self) -> usize {
        self.kept
    }
}

/// This process's epoch: its start in microseconds (distinct per restart and,
/// in practice, per replica).
pub fn new_epoch() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_micros() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frame(seq: u64) -> String {
        format!("id: 7.{seq}\nevent: e\ndata: {seq}\n\n")
    }

    /// Pushes events `from..=to` as one part.
    fn push(replay: &mut Replay, from: u64, to: u64) {
        assert_eq!(replay.next_id().seq, from);
        let mut frames = String::new();
        let mut ends = Vec::new();
        for seq in from..=to {
            frames.push_str(&frame(seq));
            ends.push(frames.len());
        }
        replay.push(Bytes::from(frames), ends);
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
        let mut replay = Replay::new(7, 1 << 20);
        assert_eq!(replay.since("7.0").unwrap(), Vec::<Bytes>::new());
        push(&mut replay, 1, 3);
        push(&mut replay, 4, 4);
        push(&mut replay, 5, 9);
        for seen in 0..=9 {
            assert_eq!(
                text(replay.since(&format!("7.{seen}")).unwrap()),
                expected(seen + 1, 9)
            );
        }
        assert_eq!(replay.since("7.10"), Err(Reset::Unknown));
        assert_eq!(replay.since("8.3"), Err(Reset::Epoch));
        assert_eq!(replay.since("garbage"), Err(Reset::Malformed));
        assert_eq!(replay.since(""), Err(Reset::Malformed));
    }

    #[test]
    fn past_the_window_is_a_reset_and_a_big_batch_keeps_its_newest() {
        let size = frame(1).len();
        let mut replay = Replay::new(7, size * 4);
        push(&mut replay, 1, 5);
        assert_eq!(replay.kept_bytes(), size * 4);
        assert_eq!(replay.since("7.0"), Err(Reset::Window));
        assert_eq!(text(replay.since("7.1").unwrap()), expected(2, 5));
        push(&mut replay, 6, 7);
        assert_eq!(replay.since("7.2"), Err(Reset::Window));
        assert_eq!(text(replay.since("7.3").unwrap()), expected(4, 7));
    }

    #[test]
    fn an_interruption_ends_every_resume_so_far() {
        let mut replay = Replay::new(7, 1 << 20);
        push(&mut replay, 1, 3);
        replay.interrupt();
        for seen in 0..=3 {
            assert_eq!(replay.since(&format!("7.{seen}")), Err(Reset::Window));
        }
        // A snapshot taken now carries 7.4: it resumes.
        assert_eq!(replay.last_id().seq, 4);
        push(&mut replay, 5, 6);
        assert_eq!(text(replay.since("7.4").unwrap()), expected(5, 6));
    }

    #[test]
    fn the_reset_event_is_sse_with_a_json_reason() {
        for reset in [
            Reset::Malformed,
            Reset::Epoch,
            Reset::Window,
            Reset::Unknown,
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
            let mut replay = Replay::new(7, size * window);
            let mut next = 1;
            for n in batches {
                push(&mut replay, next, next + n - 1);
                next += n;
            }
            let last = next - 1;
            // What is kept is exactly the events after the floor, within the window.
            let after_floor: usize = (replay.floor + 1..=last).map(|s| frame(s).len()).sum();
            prop_assert_eq!(replay.kept_bytes(), after_floor);
            prop_assert!(replay.kept_bytes() <= size * window);
            let missed: usize = (seen + 1..=last).map(|s| frame(s).len()).sum();
            match replay.since(&format!("7.{seen}")) {
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
