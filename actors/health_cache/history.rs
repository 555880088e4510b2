//! What the cache records of history (docs/design.md §12): on the leader, after
//! every change the engine applied, its records are taken, stamped with the
//! time and sent to the history writer; every `history.market_interval_seconds`
//! the market is sampled. Leadership comes from the ingester lease: taking it
//! starts recording from the baselines the writer reads back; losing it
//! stops recording at once.

use std::time::Duration;

use actix::prelude::*;

use super::actor::{HealthCache, Lease};
use super::history_link::HOLD_AT_MOST;
use crate::engine::history::{Record, Stamped};
use crate::history::{Records, StepDown, TakeOver};
use crate::leader_lease::LeaderChanged;

/// A takeover that failed (the database is down) is tried again after this.
const RETRY_TAKEOVER: Duration = Duration::from_secs(2);

/// Stamps a take of records: each at `base`, except that an owner's (or a
/// pool's) second record of the same take comes a microsecond after its
/// first, so a point is one per owner and time. Returns the last time used.
pub fn stamp(base: i64, records: Vec<Record>) -> (Vec<Stamped>, i64) {
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

impl HealthCache {
    /// Takes what the engine recorded and sends it to the writer, stamped.
    pub(super) fn record_history(&mut self) {
        let Some(link) = self.history.as_mut() else {
            return;
        };
        let Some(epoch) = link.epoch else {
            return;
        };
        let records = self.views.confirmed_engine_mut().take_history();
        if records.is_empty() {
            return;
        }
        let (rows, last) = stamp(link.tick(), records);
        link.last_us = last;
        link.writer.do_send(Records { epoch, rows });
    }

    /// A sample of the market, while recording.
    pub(super) fn sample_market(&mut self) {
        let Some(link) = self.history.as_mut() else {
            return;
        };
        let (Some(epoch), true) = (link.epoch, self.ready) else {
            return;
        };
        let sample = self.views.confirmed().engine().market_sample();
        let row = Stamped {
            at_us: link.tick(),
            record: Record::Market(sample),
        };
        link.writer.do_send(Records {
            epoch,
            rows: vec![row],
        });
    }

    /// Starts the market's samples (when history is on), and applies what
    /// waited for the lease's first answer if it never comes.
    pub(super) fn start_history_timers(&mut self, ctx: &mut Context<Self>) {
        if let Some(link) = &self.history {
            ctx.run_interval(link.market_every, |act, _| act.sample_market());
            ctx.run_later(HOLD_AT_MOST, |act, ctx| act.pump(ctx));
        }
    }

    /// Whether changes wait for recording to start (`HistoryLink::hold_until`).
    pub(super) fn holds_changes(&self) -> bool {
        self.history.as_ref().is_some_and(|l| l.holds_changes())
    }

    /// Changes wait (at most `HOLD_AT_MOST`) for a takeover about to start
    /// recording, or go on (`None`).
    fn hold_changes(&mut self, ctx: &mut Context<Self>, hold: bool) {
        let Some(link) = self.history.as_mut() else {
            return;
        };
        if hold {
            link.hold_until = Some(std::time::Instant::now() + HOLD_AT_MOST);
            ctx.run_later(HOLD_AT_MOST, |act, ctx| act.pump(ctx));
        } else if link.hold_until.take().is_some() {
            self.pump(ctx);
        }
    }

    /// The cache holds the index now: a takeover that waited for it starts.
    pub(super) fn on_ready(&mut self, ctx: &mut Context<Self>) {
        if self.lease == Lease::Held {
            self.take_over(ctx);
        }
    }

    /// Asks the writer for the baselines and starts recording from them
    /// (once the engine holds the index: a takeover diffs against it).
    fn take_over(&mut self, ctx: &mut Context<Self>) {
        let Some(link) = self.history.as_mut() else {
            return;
        };
        if self.lease != Lease::Held || link.taking_over || link.epoch.is_some() {
            return;
        }
        if !self.ready {
            // Started again when the first load is applied (`on_ready`).
            return;
        }
        link.taking_over = true;
        let ask = link.writer.send(TakeOver);
        ctx.spawn(ask.into_actor(self).map(|result, act, ctx| {
            let Some(link) = act.history.as_mut() else {
                return;
            };
            link.taking_over = false;
            match result {
                Ok(Ok(started)) if act.lease == Lease::Held => {
                    link.epoch = Some(started.epoch);
                    link.last_us = link.last_us.max(started.last_at_us);
                    act.engine_mut().start_history(started.baselines);
                    act.record_history();
                    act.hold_changes(ctx, false);
                }
                Ok(Ok(_)) => {} // lost the lease meanwhile
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "history not started; retrying");
                    ctx.run_later(RETRY_TAKEOVER, |act, ctx| act.take_over(ctx));
                }
                Err(e) => tracing::error!(error = %e, "history writer unreachable"),
            }
        }));
    }
}

impl Handler<LeaderChanged> for HealthCache {
    type Result = ();

    fn handle(&mut self, LeaderChanged(leader): LeaderChanged, ctx: &mut Self::Context) {
        self.lease = if leader {
            Lease::Held
        } else {
            Lease::Elsewhere
        };
        if leader {
            // What the previous writer stored is not known here: every value
            // is written, those already stored cost a comparison each.
            self.engine_mut().forget_stored();
            self.schedule_write_back(ctx);
        }
        let Some(link) = self.history.as_ref() else {
            return;
        };
        if leader {
            // Nothing is applied until the takeover has started recording.
            if link.epoch.is_none() {
                self.hold_changes(ctx, true);
            }
            self.take_over(ctx);
        } else if link.epoch.is_none() {
            // A follower records nothing: nothing to wait for.
            self.hold_changes(ctx, false);
        } else if link.epoch.is_some() {
            // What was recorded up to now is stored (unless another leader
            // took over first); nothing more is.
            self.record_history();
            self.engine_mut().stop_history();
            if let Some(link) = self.history.as_mut() {
                link.epoch = None;
                link.writer.do_send(StepDown);
            }
        }
    }
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
