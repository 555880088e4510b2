//! One subscriber of the feed as the load tests watch it: the typed client's
//! feed (which reconnects with its last id by itself), and what it received,
//! event by event, with when.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What one subscriber received.
#[derive(Default)]
pub struct Seen {
    /// Live events by id (tick, place): (name, when received, how often).
    pub events: BTreeMap<(u64, u64), (String, Instant, u32)>,
    /// Each connection's snapshot: the tick its state includes, and when its
    /// last event so far arrived.
    pub snapshots: Vec<(u64, Instant)>,
    pub resets: u32,
    /// Dropped by its replica for falling behind (then resumed).
    pub resyncs: u32,
    pub connects: u32,
    /// Bytes of event data received, and when the last event arrived.
    pub data_bytes: u64,
    pub last_at: Option<Instant>,
}

impl Seen {
    /// The live events of `tick` held, in order.
    pub fn of_tick(&self, tick: u64) -> Vec<(u64, u64)> {
        self.events
            .keys()
            .filter(|(t, _)| *t == tick)
            .copied()
            .collect()
    }

    /// When the last live event of `tick` arrived.
    pub fn last_of_tick(&self, tick: u64) -> Option<Instant> {
        self.events
            .iter()
            .filter(|((t, _), _)| *t == tick)
            .map(|(_, (_, at, _))| *at)
            .max()
    }

    /// Events of `tick` received more than once.
    pub fn repeated_in(&self, tick: u64) -> usize {
        self.events
            .iter()
            .filter(|((t, _), e)| *t == tick && e.2 > 1)
            .count()
    }
}

/// Follows `url`'s feed until `stop`.
pub fn follow(url: String, stop: Arc<AtomicBool>) -> Arc<Mutex<Seen>> {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let state = seen.clone();
    actix_rt::spawn(async move {
        let lendex = lendex_client::Client::with_http(&url, reqwest::Client::new());
        let mut feed = lendex.feed(&lendex_client::Query::new());
        // The connection whose snapshot is being counted.
        let mut snapshot_of = 0;
        while let Some(event) = feed.next_unless(&stop).await {
            let Ok(event) = event else { break };
            let at = Instant::now();
            let mut s = state.lock().unwrap();
            s.connects = feed.connects() as u32;
            s.data_bytes += event.data.len() as u64;
            s.last_at = Some(at);
            match event.name.as_str() {
                "reset" => s.resets += 1,
                "resync" => s.resyncs += 1,
                _ => {}
            }
            let Some(id) = event.event_id() else {
                continue;
            };
            let Some(idx) = id.place_in_tick() else {
                // A snapshot's event: one snapshot a connection.
                if snapshot_of != feed.connects() {
                    snapshot_of = feed.connects();
                    s.snapshots.push((id.tick(), at));
                } else if let Some(last) = s.snapshots.last_mut() {
                    last.1 = at;
                }
                continue;
            };
            let tick = id.tick();
            s.events
                .entry((tick, idx))
                .and_modify(|e| e.2 += 1)
                .or_insert((event.name, at, 1));
        }
    });
    seen
}
