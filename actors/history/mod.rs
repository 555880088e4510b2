//! The history writer (docs/design.md §12): the leader's engine records what
//! matters, the health cache stamps it and sends it here, and this actor
//! stores it, off every hot path (on a thread of its own, with connections of
//! its own). Records wait in a bounded queue (`queue`) and are stored by
//! binary COPY at least every `history.flush_interval_ms`, one transaction a
//! batch, retried as they were while the database is in trouble, flushed on
//! stop. Each owner's last recorded value, which a takeover starts from, is
//! checkpointed every minute rather than with every batch (a move of every
//! owner would otherwise rewrite every owner's row); a takeover reads the
//! points stored after the checkpoint as well. It also keeps the day
//! partitions: made ahead, dropped whole past `history.retention_days`.
//!
//! Only a leader records. Taking over bumps the cluster's writer epoch in the
//! database (a former leader's late flush then finds itself fenced off) and
//! reads back the baselines the engine starts from.

mod queue;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use actix::prelude::*;
use chrono::{Days, NaiveDate, Utc};

use crate::domain::history::keep_from;
use deadpool_postgres::Pool;

use crate::domain::history::rule::Baseline;
use crate::domain::pubkey::Pubkey;
use crate::engine::FastMap;
use crate::engine::history::{Baselines, Stamped};
use crate::error::{ActorError, ActorResult};
use crate::settings::HistoryConfig;
use lendex_store::history::takeover::{Takeover, take_over};
use lendex_store::history::write::{
    Flushed, Ids, checkpoint, days_of, ensure_days, last_points, store,
};
use lendex_store::history::{partitions, write::Batch};
use queue::Queue;

/// Rows stored in one transaction at most (a 25,000-owner move is one).
const MAX_BATCH: usize = 50_000;
/// How often partitions are made ahead and old days dropped.
const MAINTAIN_EVERY: Duration = Duration::from_secs(600);
/// Days made ahead of today.
const DAYS_AHEAD: u64 = 2;
/// How often the owners' last values are written (and on stop and step-down).
const CHECKPOINT_EVERY: Duration = Duration::from_secs(60);
/// Records arriving this recently mean a move is being published: its COPY
/// waits for the burst to pass (PostgreSQL would take a core from the feed).
const QUIET_FOR: Duration = Duration::from_millis(100);
/// What a COPY and its commit are allowed within the second, on top of the
/// wait and of the tick that notices it.
const STORE_TAKES: Duration = Duration::from_millis(150);

/// Whether waiting records are stored now: the queue is quiet, or its oldest
/// record has waited so long that waiting for the next tick (`every` away)
/// could break the one-second promise.
pub fn flush_due(since_last: Duration, oldest_waited: Duration, every: Duration) -> bool {
    let wait_at_most = Duration::from_secs(1)
        .saturating_sub(every)
        .saturating_sub(STORE_TAKES);
    since_last >= QUIET_FOR || oldest_waited >= wait_at_most
}

pub struct HistoryWriter {
    db: Pool,
    cluster: &'static str,
    queue: Queue,
    ids: Ids,
    /// Days whose partitions are known to exist.
    days: BTreeSet<NaiveDate>,
    retention_days: u32,
    flush_every: Duration,
    /// The epoch this replica writes under while it leads.
    leading: Option<i64>,
    flushing: bool,
    /// Callers of `Flush` waiting for the queue to empty (or a failure).
    flush_waiters: Vec<tokio::sync::oneshot::Sender<bool>>,
    partitions: i64,
    /// When the last flush failed, while failing (logged once per outage).
    failing_since: Option<Instant>,
    /// Owners whose last stored point is newer than the checkpoint: (at, baseline).
    unsaved: FastMap<Pubkey, (i64, Baseline)>,
    /// The latest time stored: a checkpoint holds every point up to it.
    stored_upto: i64,
    /// A checkpoint is wanted (the minute passed, a stop, a step-down).
    checkpoint_due: bool,
    /// When records last arrived, and when the oldest waiting ones did.
    last_arrival: Option<Instant>,
    oldest_waiting: Option<Instant>,
    /// Looks again once the queue has been quiet for `QUIET_FOR`, rather than
    /// at the next tick (a burst is stored before the next one, not with it).
    quiet_check: Option<SpawnHandle>,
}

impl HistoryWriter {
    pub fn new(db: Pool, cluster: &'static str, config: &HistoryConfig) -> HistoryWriter {
        HistoryWriter {
            db,
            cluster,
            queue: Queue::new(config.max_pending),
            ids: Ids::default(),
            days: BTreeSet::new(),
            retention_days: config.retention_days,
            flush_every: Duration::from_millis(config.flush_interval_ms.max(10)),
            leading: None,
            flushing: false,
            flush_waiters: Vec::new(),
            partitions: 0,
            failing_since: None,
            unsaved: FastMap::default(),
            stored_upto: i64::MIN,
            checkpoint_due: false,
            last_arrival: None,
            oldest_waiting: None,
            quiet_check: None,
        }
    }

    /// Every flush interval: store what waits, unless a burst is arriving.
    fn tick(&mut self, ctx: &mut Context<Self>) {
        let now = Instant::now();
        let waiting = |at: Option<Instant>| at.map_or(Duration::MAX, |at| now - at);
        let (last, oldest) = (waiting(self.last_arrival), waiting(self.oldest_waiting));
        if flush_due(last, oldest, self.flush_every) {
            self.flush(ctx);
        }
    }

    /// Stores the next batch, then the next, until the queue is empty or a
    /// store fails (the next tick retries).
    fn flush(&mut self, ctx: &mut Context<Self>) {
        if self.flushing {
            return;
        }
        let Some(batch) = self.queue.batch(MAX_BATCH).cloned() else {
            self.oldest_waiting = None;
            if self.checkpoint_due && !self.unsaved.is_empty() && self.leading.is_some() {
                self.checkpoint(ctx);
            } else {
                self.answer_waiters(true);
            }
            return;
        };
        self.flushing = true;
        let (db, cluster) = (self.db.clone(), self.cluster);
        let mut ids = std::mem::take(&mut self.ids);
        let mut days = self.days.clone();
        let job = async move {
            let started = Instant::now();
            let result = store_batch(&db, cluster, &batch, &mut ids, &mut days).await;
            (result, ids, days, batch, started.elapsed())
        };
        ctx.spawn(job.into_actor(self).map(|(result, ids, days, batch, took), act, ctx| {
            act.flushing = false;
            act.ids.merge(ids);
            act.days.extend(days);
            match result {
                Ok(Flushed::Stored) | Ok(Flushed::AlreadyStored) => {
                    act.queue.stored();
                    last_points(&batch.rows, &mut act.unsaved);
                    if let Some(last) = batch.rows.iter().map(|r| r.at_us).max() {
                        act.stored_upto = act.stored_upto.max(last);
                    }
                    crate::metrics::history::flushed(&batch, took);
                    if let Some(since) = act.failing_since.take() {
                        tracing::info!(
                            down_ms = since.elapsed().as_millis() as u64,
                            "history stored again"
                        );
                    }
                    act.flush(ctx);
                }
                Ok(Flushed::Fenced) => {
                    let dropped = act.queue.fenced(batch.epoch);
                    tracing::warn!(
                        epoch = batch.epoch,
                        dropped,
                        "history of a former leadership not stored: another leader took over"
                    );
                    crate::metrics::history::fenced(dropped);
                    act.flush(ctx);
                }
                Err(e) => {
                    crate::metrics::history::flush_failed();
                    if act.failing_since.is_none() {
                        act.failing_since = Some(Instant::now());
                        tracing::warn!(error = %e, queued = act.queue.len(), "history not stored; retrying");
                    }
                    act.answer_waiters(false);
                }
            }
        }));
    }

    /// Writes the owners' last values stored since the last checkpoint.
    fn checkpoint(&mut self, ctx: &mut Context<Self>) {
        let Some(epoch) = self.leading else {
            return;
        };
        self.flushing = true;
        let owners: Vec<(i32, i64, Baseline)> = self
            .unsaved
            .iter()
            .filter_map(|(owner, (at, b))| Some((*self.ids.owners.get(owner)?, *at, *b)))
            .collect();
        let (db, cluster, upto) = (self.db.clone(), self.cluster, self.stored_upto);
        let written: Vec<Pubkey> = self.unsaved.keys().copied().collect();
        let job = async move {
            let mut client = db.get().await?;
            Ok::<_, ActorError>(checkpoint(&mut client, cluster, epoch, upto, &owners).await?)
        };
        ctx.spawn(job.into_actor(self).map(move |result, act, ctx| {
            act.flushing = false;
            match result {
                Ok(_) => {
                    // Fenced: another leader writes them from its own reading.
                    for owner in written {
                        act.unsaved.remove(&owner);
                    }
                    act.checkpoint_due = false;
                    act.flush(ctx);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "history checkpoint not written; retrying");
                    act.answer_waiters(false);
                }
            }
        }));
    }

    fn answer_waiters(&mut self, done: bool) {
        for w in self.flush_waiters.drain(..) {
            let _ = w.send(done);
        }
    }

    /// Partitions ahead, days past retention dropped, partitions counted.
    fn maintain(&mut self, ctx: &mut Context<Self>) {
        if self.leading.is_none() {
            return;
        }
        let (db, retention) = (self.db.clone(), self.retention_days);
        let job = async move { maintain(&db, retention).await };
        ctx.spawn(job.into_actor(self).map(|result, act, _| match result {
            Ok((days, count)) => {
                act.days = days;
                act.partitions = count;
            }
            Err(e) => {
                tracing::warn!(error = %e, "history partitions not maintained; retrying later")
            }
        }));
    }
}

async fn store_batch(
    db: &Pool,
    cluster: &str,
    batch: &Batch,
    ids: &mut Ids,
    days: &mut BTreeSet<NaiveDate>,
) -> ActorResult<Flushed> {
    let mut client = db.get().await?;
    ensure_days(&client, &days_of(&batch.rows), days).await?;
    Ok(store(&mut client, cluster, batch, ids).await?)
}

async fn maintain(db: &Pool, retention_days: u32) -> ActorResult<(BTreeSet<NaiveDate>, i64)> {
    let client = db.get().await?;
    let today = Utc::now().date_naive();
    let ahead: BTreeSet<NaiveDate> = (0..=DAYS_AHEAD)
        .filter_map(|d| today.checked_add_days(Days::new(d)))
        .collect();
    let mut known = partitions::days(&client).await?;
    ensure_days(&client, &ahead, &mut known).await?;
    let keep = keep_from(today, retention_days);
    let dropped = partitions::drop_before(&client, keep).await?;
    if !dropped.is_empty() {
        tracing::info!(before = %keep, statements = dropped.len(), "history days dropped");
    }
    let days = partitions::days(&client).await?;
    Ok((days, partitions::count(&client).await?))
}

impl Actor for HistoryWriter {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(self.flush_every, |act, ctx| act.tick(ctx));
        ctx.run_interval(MAINTAIN_EVERY, |act, ctx| act.maintain(ctx));
        ctx.run_interval(CHECKPOINT_EVERY, |act, ctx| {
            act.checkpoint_due = true;
            act.flush(ctx);
        });
    }
}

/// Records of leader `epoch`, stamped, to be stored.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Records {
    pub epoch: i64,
    pub rows: Vec<Stamped>,
}

impl Handler<Records> for HistoryWriter {
    type Result = ();

    fn handle(&mut self, msg: Records, ctx: &mut Self::Context) {
        crate::metrics::history::recorded(msg.rows.iter().map(|r| &r.record));
        let dropped = self.queue.push(msg.epoch, msg.rows);
        if dropped > 0 {
            crate::metrics::history::dropped(dropped);
        }
        let now = Instant::now();
        self.last_arrival = Some(now);
        self.oldest_waiting.get_or_insert(now);
        if let Some(check) = self.quiet_check.take() {
            ctx.cancel_future(check);
        }
        self.quiet_check = Some(ctx.run_later(QUIET_FOR, |act, ctx| {
            act.quiet_check = None;
            act.tick(ctx);
        }));
        if self.queue.len() >= MAX_BATCH {
            self.flush(ctx);
        }
    }
}

/// What a leader starts recording from.
pub struct Started {
    pub epoch: i64,
    pub baselines: Baselines,
    /// Records are stamped after this time (the latest stored).
    pub last_at_us: i64,
}

/// This replica leads now: store what a former leadership of it left (if no
/// one took over since), take the writer epoch, read the baselines.
#[derive(Message)]
#[rtype(result = "ActorResult<Started>")]
pub struct TakeOver;

impl Handler<TakeOver> for HistoryWriter {
    type Result = ResponseActFuture<Self, ActorResult<Started>>;

    fn handle(&mut self, _: TakeOver, ctx: &mut Self::Context) -> Self::Result {
        let (db, cluster, retention) = (self.db.clone(), self.cluster, self.retention_days);
        let me = ctx.address();
        let job = async move {
            // What a former leadership of this replica queued is stored first,
            // under its own epoch (fenced off if someone else led meanwhile).
            let _ = me.send(Flush).await;
            let client = db.get().await?;
            let taken: Takeover = take_over(&client, cluster).await?;
            drop(client);
            let maintained = maintain(&db, retention).await;
            Ok::<_, ActorError>((taken, maintained))
        };
        Box::pin(job.into_actor(self).map(|result, act, _| {
            let (taken, maintained) = result?;
            match maintained {
                Ok((days, count)) => {
                    act.days = days;
                    act.partitions = count;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "history partitions not maintained; retrying later")
                }
            }
            act.ids.merge(taken.ids);
            act.leading = Some(taken.epoch);
            // What was stored after the last checkpoint goes into the next one.
            act.unsaved = taken.after_checkpoint.into_iter().collect();
            act.stored_upto = taken.last_at_us;
            tracing::info!(
                epoch = taken.epoch,
                owners = taken.baselines.owners.len(),
                "recording history"
            );
            Ok(Started {
                epoch: taken.epoch,
                baselines: taken.baselines,
                last_at_us: taken.last_at_us,
            })
        }))
    }
}

/// This replica no longer leads: what it queued is still stored (fenced off
/// if another leader took over).
#[derive(Message)]
#[rtype(result = "()")]
pub struct StepDown;

impl Handler<StepDown> for HistoryWriter {
    type Result = ();

    fn handle(&mut self, _: StepDown, ctx: &mut Self::Context) {
        // What this leadership stored is checkpointed while it may still be
        // (fenced off if another leader took over already).
        self.checkpoint_due = true;
        self.flush(ctx);
        self.leading = None;
    }
}

/// Stores everything queued now; answers whether the queue emptied.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct Flush;

impl Handler<Flush> for HistoryWriter {
    type Result = ResponseFuture<bool>;

    fn handle(&mut self, _: Flush, ctx: &mut Self::Context) -> Self::Result {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.flush_waiters.push(tx);
        self.checkpoint_due = true;
        if !self.flushing {
            self.flush(ctx);
        }
        Box::pin(async move { rx.await.unwrap_or(false) })
    }
}

/// Makes partitions ahead and drops days past retention now (the writer does
/// it every ten minutes and at each takeover); answers once done.
#[derive(Message)]
#[rtype(result = "ActorResult<()>")]
pub struct Maintain;

impl Handler<Maintain> for HistoryWriter {
    type Result = ResponseActFuture<Self, ActorResult<()>>;

    fn handle(&mut self, _: Maintain, _: &mut Self::Context) -> Self::Result {
        let (db, retention) = (self.db.clone(), self.retention_days);
        Box::pin(
            async move { maintain(&db, retention).await }
                .into_actor(self)
                .map(|result, act, _| {
                    let (days, count) = result?;
                    act.days = days;
                    act.partitions = count;
                    Ok(())
                }),
        )
    }
}

/// What /metrics and health report of the writer.
#[derive(Debug, Clone, Copy)]
pub struct HistoryStats {
    pub queued: usize,
    pub dropped: u64,
    pub partitions: i64,
    pub leading: bool,
    pub failing: bool,
}

#[derive(Message)]
#[rtype(result = "HistoryStats")]
pub struct GetHistoryStats;

impl Handler<GetHistoryStats> for HistoryWriter {
    type Result = MessageResult<GetHistoryStats>;

    fn handle(&mut self, _: GetHistoryStats, _: &mut Self::Context) -> Self::Result {
        MessageResult(HistoryStats {
            queued: self.queue.len(),
            dropped: self.queue.dropped(),
            partitions: self.partitions,
            leading: self.leading.is_some(),
            failing: self.failing_since.is_some(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_stored_after_it_passes_and_within_a_second() {
        let ms = Duration::from_millis;
        let every = ms(250);
        assert!(!flush_due(ms(20), ms(20), every), "records still arriving");
        assert!(flush_due(ms(100), ms(100), every), "quiet for long enough");
        assert!(!flush_due(ms(10), ms(590), every), "still time to wait");
        assert!(flush_due(ms(10), ms(600), every), "waited long enough");
        // Looking once a second, every look stores.
        assert!(flush_due(ms(0), ms(0), ms(1000)));
        // Nothing waits: the oldest is "waited forever", which changes nothing
        // (the queue is empty and the flush stores nothing).
        assert!(flush_due(Duration::MAX, Duration::MAX, every));
    }
}
