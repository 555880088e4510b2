//! What the cache records of history (docs/design.md §12): on the leader, after
//! every change the engine applied, its records are taken, stamped with the
//! time and sent to the history writer; every `history.market_interval_seconds`
//! the market is sampled. Leadership comes from the ingester lease: taking it
//! starts recording from the baselines the writer reads back; losing it
//! stops recording at once. `HistoryLink` holds this replica's part; the
//! actor (`actor.rs`) tells it when the lease moves and what the engine
//! holds, and runs the takeover it asks for.

use std::time::{Duration, Instant};

use actix::prelude::*;

use crate::engine::Engine;
use crate::engine::history::{Record, Stamped};
use crate::error::ActorResult;
use crate::history::{HistoryWriter, Records, Started, StepDown, TakeOver};
use crate::serve::poll_answers::now_micros;

/// How long changes wait for recording to start, at most.
pub(super) const HOLD_AT_MOST: Duration = Duration::from_secs(2);
/// A takeover that failed (the database is down) is tried again after this.
pub(super) const RETRY_TAKEOVER: Duration = Duration::from_secs(2);

/// The cache's side of history: under which writer epoch this replica
/// records (it records while it holds the lease), and the clock its records
/// are stamped with.
pub struct HistoryLink {
    writer: Addr<HistoryWriter>,
    /// The writer epoch records are stored under, while recording.
    epoch: Option<i64>,
    taking_over: bool,
    /// The last time stamped: every take is stamped after it.
    last_us: i64,
    market_every: Duration,
    /// Until then no change is applied: this replica may be about to record
    /// (the lease's first answer, or a takeover, is awaited), and every
    /// state the engine holds must be judged by the rule, none skipped
    /// because recording started late. Bounded, so a database fault that
    /// stalls the takeover cannot stall the cache (the takeover's `load`
    /// points then cover what went by).
    hold_until: Option<Instant>,
}

/// How a takeover's answer went.
pub(super) enum TookOver {
    /// Recording from now on: changes wait no longer.
    Recording,
    /// The writer could not start it (the database is down): try again.
    Retry,
    /// The lease was lost meanwhile, or the writer is gone: nothing to do.
    Nothing,
}

impl HistoryLink {
    pub fn new(writer: Addr<HistoryWriter>, market_every: Duration) -> HistoryLink {
        HistoryLink {
            writer,
            epoch: None,
            taking_over: false,
            last_us: i64::MIN,
            market_every,
            // Until the lease has answered once.
            hold_until: Some(Instant::now() + HOLD_AT_MOST),
        }
    }

    /// How often the market is sampled.
    pub(super) fn market_every(&self) -> Duration {
        self.market_every
    }

    pub(super) fn is_recording(&self) -> bool {
        self.epoch.is_some()
    }

    /// Whether changes wait for recording to start now.
    pub(super) fn holds_changes(&self) -> bool {
        self.hold_until.is_some_and(|until| Instant::now() < until)
    }

    /// Changes wait, at most `HOLD_AT_MOST`, for a takeover about to start.
    pub(super) fn hold(&mut self) {
        self.hold_until = Some(Instant::now() + HOLD_AT_MOST);
    }

    /// Changes go on; true when they were held.
    pub(super) fn release(&mut self) -> bool {
        self.hold_until.take().is_some()
    }

    /// Takes what the engine recorded and sends it to the writer, stamped
    /// (while recording).
    pub(super) fn record(&mut self, engine: &mut Engine) {
        let Some(epoch) = self.epoch else {
            return;
        };
        let records = engine.take_history();
        if records.is_empty() {
            return;
        }
        let (rows, last) = stamp(self.tick(), records);
        self.last_us = last;
        self.writer.do_send(Records { epoch, rows });
    }

    /// A sample of the market, while recording.
    pub(super) fn sample(&mut self, engine: &Engine) {
        let Some(epoch) = self.epoch else {
            return;
        };
        let row = Stamped {
            at_us: self.tick(),
            record: Record::Market(engine.market_sample()),
        };
        self.writer.do_send(Records {
            epoch,
            rows: vec![row],
        });
    }

    /// The ask that starts recording (the writer reads the baselines back),
    /// unless one is under way or recording has started.
    pub(super) fn take_over(
        &mut self,
    ) -> Option<impl Future<Output = Result<ActorResult<Started>, MailboxError>> + 'static> {
        if self.taking_over || self.epoch.is_some() {
            return None;
        }
        self.taking_over = true;
        Some(self.writer.send(TakeOver))
    }

    /// The takeover's answer; `leader`: the lease is still held. Recording
    /// starts from the baselines, which the engine diffs against.
    pub(super) fn took_over(
        &mut self,
        answer: Result<ActorResult<Started>, MailboxError>,
        leader: bool,
        engine: &mut Engine,
    ) -> TookOver {
        self.taking_over = false;
        match answer {
            Ok(Ok(started)) if leader => {
                self.epoch = Some(started.epoch);
                self.last_us = self.last_us.max(started.last_at_us);
                engine.start_history(started.baselines);
                self.record(engine);
                TookOver::Recording
            }
            Ok(Ok(_)) => TookOver::Nothing,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "history not started; retrying");
                TookOver::Retry
            }
            Err(e) => {
                tracing::error!(error = %e, "history writer unreachable");
                TookOver::Nothing
            }
        }
    }

    /// The lease is lost: what was recorded up to now is stored (unless
    /// another leader took over first); nothing more is.
    pub(super) fn step_down(&mut self, engine: &mut Engine) {
        if self.epoch.is_none() {
            return;
        }
        self.record(engine);
        engine.stop_history();
        self.epoch = None;
        self.writer.do_send(StepDown);
    }

    /// A time after every one stamped before, and after the clock's now.
    fn tick(&mut self) -> i64 {
        self.last_us = now_micros().max(self.last_us.saturating_add(1));
        self.last_us
    }
}

/// Stamps a take of records: each at `base`, except that an owner's (or a
/// pool's) second record of the same take comes a microsecond after its
/// first, so a point is one per owner and time. Returns the last time used.
pub(super) fn stamp(base: i64, records: Vec<Record>) -> (Vec<Stamped>, i64) {
    let mut seen: crate::engine::FastMap<[u8; 32], i64> = Default::default();
    let mut last = base;
    let rows = records
        .into_iter()
        .map(|record| {
            let key = match &record {
                Record::Point(p) => Some(p.owner.to_bytes()),
                Record::Price(p) => Some(p.pool.to_bytes()),
                Record::Event(_) | Record::Market(_) => None,
            };
            let at_us = match key {
                Some(key) => {
                    let n = seen.entry(key).or_insert(0);
                    *n += 1;
                    base + *n - 1
                }
                None => base,
            };
            last = last.max(at_us);
            Stamped { at_us, record }
        })
        .collect();
    (rows, last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::history::Cause;
    use crate::domain::pubkey::Pubkey;
    use crate::engine::history::PointRecord;
    use ruint::aliases::U256;

    fn point(owner: u8) -> Record {
        Record::Point(PointRecord {
            owner: Pubkey::new_from_array([owner; 32]),
            slot: 1,
            health_factor: 1,
            collateral: U256::ZERO,
            debt: U256::ZERO,
            cause: Cause::Price,
        })
    }

    #[test]
    fn an_owner_is_stamped_once_per_microsecond() {
        let (rows, last) = stamp(100, vec![point(1), point(2), point(1), point(1)]);
        let ats: Vec<i64> = rows.iter().map(|r| r.at_us).collect();
        assert_eq!(ats, vec![100, 100, 101, 102]);
        assert_eq!(last, 102);
    }
}
