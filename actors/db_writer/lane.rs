//! One writer lane: an actor with its own queue and its own connection. While
//! one batch commits, new writes queue up; the next batch takes the whole queue
//! (up to MAX_BATCH writes and MAX_BATCH_ROWS rows) in one transaction (group
//! commit). A caller's reply is sent
//! only after COMMIT returned, so a 2xx always means the row is durable.
//!
//! Time is bounded: a stalled database answers 503 `database unavailable`
//! within `database.write_timeout_ms` (5 s by default), shared out by
//! `lendex_store::WriteBudget`: a write that waited in the queue past its share is
//! answered 503 and never applied; the connection's own lock_timeout and
//! statement_timeout (`lendex_store::writer_pool`) end a stalled statement inside the
//! run share, and a batch that still overruns it is abandoned with its
//! connection, so PostgreSQL rolls it back.

use std::time::{Duration, Instant};

use actix::prelude::*;
use deadpool_postgres::Pool;
use tokio::sync::oneshot;

use super::batch::{Pending, QueuedWrite, apply_batch};
use crate::error::{ActorError, ActorResult};
use lendex_store::WriteBudget;
use lendex_store::writes::{Lane, WriteCommand};

/// Most writes applied in one transaction.
const MAX_BATCH: usize = 512;
/// Most rows (`WriteCommand::rows`) in one transaction, unless one write alone
/// has more. Seven 10,000-row pool reconciles queued together made a batch that
/// overran its time share every time it was tried, so the index never filled.
const MAX_BATCH_ROWS: usize = 10_000;

/// Ask a lane to apply `C` and answer with its output once committed.
pub struct Write<C: WriteCommand>(pub C);

impl<C: WriteCommand> Message for Write<C> {
    type Result = ActorResult<C::Output>;
}

/// Resolves once every write queued before it has been committed (or failed).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Drain;

/// What a lane has done, for /api/health.
#[derive(Message)]
#[rtype(result = "LaneStats")]
pub struct GetLaneStats;

#[derive(Debug, Clone)]
pub struct LaneStats {
    pub lane: Lane,
    /// Writes waiting for the next batch.
    pub queued: usize,
    pub batches: u64,
    pub writes: u64,
    pub largest_batch: usize,
    /// Batches that failed as a whole (database down, stalled, or a failed COMMIT).
    pub failed_batches: u64,
    /// Writes answered 503 unapplied because they waited past the queue share.
    pub expired_writes: u64,
    /// Duration of the last batch, commit included.
    pub last_batch_ms: Option<f64>,
}

struct Queued {
    write: Box<dyn QueuedWrite>,
    rows: usize,
    since: Instant,
}

/// How many writes from the front of the queue (their row counts in order) the
/// next batch takes: at least one, at most `max_writes`, and no more rows
/// than `max_rows` unless the first write alone has more.
fn batch_len(rows: impl IntoIterator<Item = usize>, max_writes: usize, max_rows: usize) -> usize {
    let mut total = 0usize;
    let mut taken = 0;
    for r in rows.into_iter().take(max_writes) {
        if taken > 0 && total.saturating_add(r) > max_rows {
            break;
        }
        total = total.saturating_add(r);
        taken += 1;
    }
    taken
}

pub struct LaneWriter {
    pool: Pool,
    /// The lane's writes may be applied in any order (Lane::commutes).
    commutes: bool,
    /// A write queued longer than this is answered 503 unapplied.
    max_wait: Duration,
    /// A batch running longer than this is abandoned (503 to its writes).
    max_batch_time: Duration,
    queue: Vec<Queued>,
    flushing: bool,
    drain_waiters: Vec<oneshot::Sender<()>>,
    stats: LaneStats,
}

impl LaneWriter {
    /// `pool` is the lane's own (see `lendex_store::writer_pool`), made with the same budget.
    pub fn new(lane: Lane, pool: Pool, budget: WriteBudget) -> LaneWriter {
        LaneWriter {
            pool,
            commutes: lane.commutes(),
            max_wait: budget.queue,
            max_batch_time: budget.run,
            queue: Vec::new(),
            flushing: false,
            drain_waiters: Vec::new(),
            stats: LaneStats {
                lane,
                queued: 0,
                batches: 0,
                writes: 0,
                largest_batch: 0,
                failed_batches: 0,
                expired_writes: 0,
                last_batch_ms: None,
            },
        }
    }

    fn start_flush(&mut self, ctx: &mut Context<Self>) {
        if self.flushing {
            return;
        }
        if self.queue.is_empty() {
            for waiter in self.drain_waiters.drain(..) {
                let _ = waiter.send(());
            }
            return;
        }
        let take = batch_len(self.queue.iter().map(|q| q.rows), MAX_BATCH, MAX_BATCH_ROWS);
        let mut batch = Vec::with_capacity(take);
        for queued in self.queue.drain(..take) {
            if queued.since.elapsed() > self.max_wait {
                let mut write = queued.write;
                write.finish(Some(ActorError::database(
                    "the write waited in its lane past its share of database.write_timeout_ms",
                )));
                self.stats.expired_writes += 1;
            } else {
                batch.push(queued.write);
            }
        }
        if batch.is_empty() {
            return self.start_flush(ctx);
        }
        if self.commutes {
            // Each kind together, in arrival order within it: one statement each.
            batch.sort_by_key(|w| w.as_any().type_id());
        }
        self.flushing = true;
        self.stats.batches += 1;
        self.stats.writes += batch.len() as u64;
        self.stats.largest_batch = self.stats.largest_batch.max(batch.len());
        let (pool, limit) = (self.pool.clone(), self.max_batch_time);
        let lane = self.stats.lane.name();
        let flush = async move {
            let started = Instant::now();
            let failure = match pool.get().await {
                Err(e) => Some(ActorError::from(e)),
                Ok(mut client) => {
                    match tokio::time::timeout(limit, apply_batch(&mut client, &mut batch)).await {
                        Ok(result) => result.err().map(ActorError::from),
                        Err(_) => {
                            // Abandoned: out of the pool and closed, with its transaction.
                            drop(deadpool_postgres::Object::take(client));
                            Some(ActorError::database(
                                "the batch ran past its share of database.write_timeout_ms",
                            ))
                        }
                    }
                }
            };
            if let Some(err) = &failure {
                tracing::warn!(lane, error = %err, writes = batch.len(), "write batch not committed");
            }
            for write in batch.iter_mut() {
                write.finish(failure.clone());
            }
            let took = started.elapsed();
            crate::metrics::writer_batch(lane, batch.len(), took);
            (failure.is_some(), took)
        };
        ctx.spawn(flush.into_actor(self).map(|(failed, took), act, ctx| {
            act.flushing = false;
            act.stats.failed_batches += u64::from(failed);
            act.stats.last_batch_ms = Some(took.as_secs_f64() * 1000.0);
            act.start_flush(ctx);
        }));
    }
}

impl Actor for LaneWriter {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(16_384);
    }
}

impl<C: WriteCommand> Handler<Write<C>> for LaneWriter {
    type Result = ResponseFuture<ActorResult<C::Output>>;

    fn handle(&mut self, msg: Write<C>, ctx: &mut Self::Context) -> Self::Result {
        let (reply, answer) = oneshot::channel();
        let rows = msg.0.rows();
        self.queue.push(Queued {
            write: Box::new(Pending {
                cmd: msg.0,
                result: None,
                reply: Some(reply),
            }),
            rows,
            since: Instant::now(),
        });
        self.start_flush(ctx);
        Box::pin(async move { answer.await? })
    }
}

impl Handler<Drain> for LaneWriter {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Drain, ctx: &mut Self::Context) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.drain_waiters.push(tx);
        self.start_flush(ctx);
        Box::pin(async move {
            let _ = rx.await;
        })
    }
}

impl Handler<GetLaneStats> for LaneWriter {
    type Result = MessageResult<GetLaneStats>;

    fn handle(&mut self, _: GetLaneStats, _: &mut Self::Context) -> Self::Result {
        MessageResult(LaneStats {
            queued: self.queue.len(),
            ..self.stats.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::batch_len;

    #[test]
    fn a_batch_stops_before_the_row_cap_but_always_takes_one() {
        // Small writes: the count cap.
        assert_eq!(batch_len([1; 600], 512, 10_000), 512);
        assert_eq!(batch_len([1; 3], 512, 10_000), 3);
        // Heavy writes go one at a time; a single one over the cap still goes.
        assert_eq!(batch_len([10_000, 10_000, 10_000], 512, 10_000), 1);
        assert_eq!(batch_len([25_000, 1], 512, 10_000), 1);
        // Small writes ride along up to the cap, and no further.
        assert_eq!(batch_len([9_000, 500, 500, 1], 512, 10_000), 3);
        assert_eq!(batch_len([1, 1, 10_000], 512, 10_000), 2);
        assert_eq!(batch_len(Vec::<usize>::new(), 512, 10_000), 0);
        assert_eq!(batch_len([usize::MAX, usize::MAX], 512, 10_000), 1);
    }
}
