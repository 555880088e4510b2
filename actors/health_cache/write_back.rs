//! The write-back: the engine's health factors stored in `positions` (the
//! stored, account-level health factor (docs/design.md §3); every row of an owner).
//!
//! No route reads that column, so in the background it is the least urgent
//! work of the service, and it must not hold up what is urgent. A price move
//! of a pool everyone holds re-scores every owner: 25,000 owners are 100,000
//! rows, most of a second of one core for PostgreSQL. Written at once, that
//! second is taken from the answers going out to held polls and streams on a
//! two-core machine, and an ingest write queued behind it on the index lane
//! waits for all of it. So:
//! - it is written in chunks of `CHUNK` owners (each a short index-driven
//!   statement), and an ingest write waits for one chunk at most;
//! - in the background it paces itself: after each chunk it rests as long as
//!   the chunk took, twice over, so it never takes more than a third of one
//!   core; after a big move it starts only once the answers had a head start;
//! - one write-back runs at a time, so values are committed in the order they
//!   were taken; a caller that waits on the write (`Pace::Urgent`: a sync that
//!   answers only once its health factor is stored, the flush at shutdown)
//!   queues behind the one in flight and makes it stop resting.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use actix::prelude::*;

use super::messages::WrittenBack;
use crate::db_writer::{Writers, write};
use crate::domain::pubkey::Pubkey;
use crate::engine::FastMap;
use lendex_store::chain_writes::SetHealthFactors;

/// How long health factors from moves are gathered before a write-back starts.
const EVERY: Duration = Duration::from_millis(50);
/// The head start given to the answers a big move wakes (more than one chunk
/// of owners changed): 10,000 held polls take about 0.8 s to answer here.
const HEAD_START: Duration = Duration::from_secs(1);
/// Owners written per statement: about 4,000 rows, 20 ms of PostgreSQL here.
const CHUNK: usize = 1_000;

/// Rest after a chunk, in multiples of the time it took.
const REST: u32 = 2;

/// Whether someone waits on the write.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Pace {
    /// Nobody waits: rest between chunks.
    Background,
    /// A caller waits: no rest, and the write in flight stops resting.
    Urgent,
}

/// The write-back's state in the actor.
#[derive(Default)]
pub(super) struct WriteBack {
    /// A background write-back is scheduled or running.
    busy: bool,
    /// Held by the write-back in flight: one at a time, in the order taken.
    turn: Arc<tokio::sync::Mutex<()>>,
    /// Urgent write-backs waiting or running.
    urgent: Arc<AtomicUsize>,
}

impl WriteBack {
    /// How long to gather before a background write-back of `dirty` owners
    /// starts, or None when one is already scheduled or running (it looks
    /// again when it ends). Marks one as scheduled.
    pub(super) fn schedule(&mut self, dirty: usize) -> Option<Duration> {
        if self.busy || dirty == 0 {
            return None;
        }
        self.busy = true;
        Some(if dirty > CHUNK { HEAD_START } else { EVERY })
    }

    /// The scheduled background write-back has ended.
    pub(super) fn ended(&mut self) {
        self.busy = false;
    }

    /// Writes `taken` through `writer`, telling `me` the outcome of each chunk
    /// (`WrittenBack`: stored, or still to be written after a failure); the
    /// future resolves when every chunk has been answered.
    pub(super) fn write(
        &self,
        taken: Taken,
        pace: Pace,
        me: Recipient<WrittenBack>,
        writer: Writers,
        cluster: &'static str,
    ) -> impl Future<Output = ()> + 'static {
        let turn = self.turn.clone();
        let urgent = self.urgent.clone();
        let hurry = (pace == Pace::Urgent).then(|| Hurry::new(urgent.clone()));
        async move {
            // Counted until this write ends, however it ends.
            let _hurry = hurry;
            let _turn = turn.lock().await;
            // Text encoding of 25k keys costs milliseconds: not on the actor's
            // thread, where the next price move is being applied.
            let chunks = tokio::task::spawn_blocking(move || encode(cluster, taken))
                .await
                .unwrap_or_else(|e| {
                    // Only a panic or a runtime shutting down gets here; the values
                    // stay unstored and the next reload writes them.
                    tracing::error!(error = %e, "health factor write-back not encoded");
                    Vec::new()
                });
            let mut chunks = chunks.into_iter().peekable();
            while let Some((batch, command)) = chunks.next() {
                let started = Instant::now();
                let ok = write(&writer, command).await.is_ok();
                if ok {
                    crate::metrics::health_factors_written(batch.len());
                }
                let _ = me.send(WrittenBack { batch, ok }).await;
                if !ok {
                    // The database is in trouble: the rest stays dirty for the
                    // next write-back rather than failing chunk after chunk.
                    let batch: Taken = chunks.flat_map(|(batch, _)| batch).collect();
                    let _ = me.send(WrittenBack { batch, ok: false }).await;
                    break;
                }
                if pace == Pace::Background
                    && chunks.peek().is_some()
                    && urgent.load(Ordering::SeqCst) == 0
                {
                    tokio::time::sleep(started.elapsed() * REST).await;
                }
            }
        }
    }
}

pub(super) type Taken = FastMap<Pubkey, u128>;

/// The taken values in chunks of `CHUNK` owners, each with its statement.
fn encode(cluster: &'static str, taken: Taken) -> Vec<(Taken, SetHealthFactors)> {
    let entries: Vec<(Pubkey, u128)> = taken.into_iter().collect();
    entries
        .chunks(CHUNK)
        .map(|chunk| {
            let (owners, health_factors) = chunk
                .iter()
                .map(|(owner, hf)| (owner.to_string(), hf.to_string()))
                .unzip();
            let command = SetHealthFactors {
                cluster,
                owners,
                health_factors,
            };
            (chunk.iter().copied().collect(), command)
        })
        .collect()
}

/// Counts an urgent write-back from when it is asked for until it ends or is
/// dropped (the actor stopping), so a background one never rests for nobody.
struct Hurry(Arc<AtomicUsize>);

impl Hurry {
    fn new(urgent: Arc<AtomicUsize>) -> Self {
        urgent.fetch_add(1, Ordering::SeqCst);
        Hurry(urgent)
    }
}

impl Drop for Hurry {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_hold_every_owner_once_and_at_most_chunk_each() {
        for n in [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 7] {
            let taken: Taken = (0..n).map(|i| (Pubkey::new_unique(), i as u128)).collect();
            let chunks = encode("localnet", taken.clone());
            assert_eq!(chunks.len(), n.div_ceil(CHUNK));
            let mut seen = Taken::default();
            for (batch, command) in chunks {
                assert!(batch.len() <= CHUNK && !batch.is_empty());
                assert_eq!(command.owners.len(), batch.len());
                assert_eq!(command.cluster, "localnet");
                for (owner, hf) in command.owners.iter().zip(&command.health_factors) {
                    let key: Pubkey = owner.parse().unwrap();
                    assert_eq!(batch[&key].to_string(), *hf);
                    assert!(seen.insert(key, batch[&key]).is_none());
                }
            }
            assert_eq!(seen, taken);
        }
    }
}
