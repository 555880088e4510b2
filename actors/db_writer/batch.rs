//! Applying one batch of queued writes in one transaction.
//!
//! Fast path: the batch in arrival order, each run of consecutive writes of a
//! command with a multi-row form (`WriteCommand::apply_all`) as one statement,
//! the others one by one, and no savepoints: BEGIN, a statement per run, COMMIT.
//! If any statement fails on its data, the transaction is rolled back and the
//! batch applied again with one savepoint per write, so the failing write fails
//! alone with its own error and the others commit. A database that is down or
//! stalled fails the whole batch at once (no retry one by one).

use std::any::Any;

use deadpool_postgres::Transaction;
use futures_util::future::BoxFuture;
use tokio::sync::oneshot;

use crate::error::{ActorError, ActorResult};
use lendex_store::error::{DbError, DbResult};
use lendex_store::queries;
use lendex_store::writes::{Lane, WriteCommand};

/// A queued write with its reply channel, its output type erased.
pub(super) trait QueuedWrite: Send {
    /// Runs the command alone; keeps its result for `finish`, and answers its
    /// error if it failed.
    fn apply<'a>(&'a mut self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<()>>;
    /// How to apply a run of writes of this type as one statement, if it has one.
    fn run_form(&self) -> Option<RunForm>;
    /// Whether it is a change of the index of its own: a tick of the feed's
    /// change log to itself, even when committed with others (each write a
    /// client was answered for is judged on its own: feed, history).
    fn own_tick(&self) -> bool;
    /// Forgets a result kept by a rolled-back attempt.
    fn reset(&mut self);
    /// Sends the reply: the command's result if the batch committed, else `failure`.
    fn finish(&mut self, failure: Option<ActorError>);
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// Applies a run of writes of one type (the type the function was made for).
pub(super) type RunForm =
    for<'a> fn(&'a mut [Box<dyn QueuedWrite>], &'a Transaction<'a>) -> BoxFuture<'a, DbResult<()>>;

pub(super) struct Pending<C: WriteCommand> {
    pub cmd: C,
    pub result: Option<DbResult<C::Output>>,
    pub reply: Option<oneshot::Sender<ActorResult<C::Output>>>,
}

impl<C: WriteCommand> QueuedWrite for Pending<C> {
    fn apply<'a>(&'a mut self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<()>> {
        Box::pin(async move {
            let result = self.cmd.apply(tx).await;
            let outcome = match &result {
                Ok(_) => Ok(()),
                Err(e) => Err(e.clone()),
            };
            self.result = Some(result);
            outcome
        })
    }

    fn run_form(&self) -> Option<RunForm> {
        C::MULTI_ROW.then_some(apply_run::<C> as RunForm)
    }

    fn own_tick(&self) -> bool {
        C::LANE == Lane::Index
    }

    fn reset(&mut self) {
        self.result = None;
    }

    fn finish(&mut self, failure: Option<ActorError>) {
        let result = match (failure, self.result.take()) {
            // A command that failed on its own keeps its own error.
            (_, Some(Err(own))) => Err(own.into()),
            (Some(batch_error), _) => Err(batch_error),
            (None, Some(Ok(output))) => Ok(output),
            (None, None) => Err(ActorError::internal("a write was answered with no result")),
        };
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(result);
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The run form of `C`: every write of `run` is a `Pending<C>`.
fn apply_run<'a, C: WriteCommand>(
    run: &'a mut [Box<dyn QueuedWrite>],
    tx: &'a Transaction<'a>,
) -> BoxFuture<'a, DbResult<()>> {
    Box::pin(async move {
        let outputs = {
            let cmds: Vec<&C> = run
                .iter()
                .filter_map(|w| w.as_any().downcast_ref::<Pending<C>>())
                .map(|p| &p.cmd)
                .collect();
            if cmds.len() != run.len() {
                return Err(DbError::failed("a run of writes was not of one command"));
            }
            C::apply_all(cmds, tx).await?
        };
        for (write, output) in run.iter_mut().zip(outputs) {
            if let Some(p) = write.as_any_mut().downcast_mut::<Pending<C>>() {
                p.result = Some(Ok(output));
            }
        }
        Ok(())
    })
}

/// What a batch came to: committed (each write's own result stands), or failed
/// as a whole with this error.
pub(super) async fn apply_batch(
    client: &mut deadpool_postgres::Object,
    batch: &mut [Box<dyn QueuedWrite>],
) -> DbResult<()> {
    if batch.len() > 1 {
        let tx = client.transaction().await?;
        match apply_runs(&tx, batch).await {
            Ok(()) => return tx.commit().await.map_err(DbError::from),
            // Down or stalled: one by one would only wait again, once per write.
            Err(e) if e.is_unavailable() => return Err(e),
            Err(_) => {
                tx.rollback().await?;
                for write in batch.iter_mut() {
                    write.reset();
                }
            }
        }
    }
    let tx = client.transaction().await?;
    if let [only] = batch {
        // One write: no savepoint needed; if it failed, roll back and let it report.
        if only.apply(&tx).await.is_err() {
            let _ = tx.rollback().await;
            return Ok(());
        }
    } else {
        for (i, write) in batch.iter_mut().enumerate() {
            tx.batch_execute("SAVEPOINT w").await?;
            if i > 0 {
                next_tick(&tx, &**write).await?;
            }
            match write.apply(&tx).await {
                Ok(()) => tx.batch_execute("RELEASE SAVEPOINT w").await?,
                // Down or stalled: the rest would each wait again.
                Err(e) if e.is_unavailable() => return Err(e),
                Err(_) => tx.batch_execute("ROLLBACK TO SAVEPOINT w").await?,
            }
        }
    }
    tx.commit().await?;
    Ok(())
}

/// The fast path: runs of a multi-row command as one statement each, the rest
/// one by one, in arrival order. Any failure is returned (the transaction is
/// then aborted).
async fn apply_runs(tx: &Transaction<'_>, batch: &mut [Box<dyn QueuedWrite>]) -> DbResult<()> {
    let mut i = 0;
    while i < batch.len() {
        let form = batch[i].run_form();
        let kind = batch[i].as_any().type_id();
        let mut end = i + 1;
        if form.is_some() {
            while end < batch.len() && batch[end].as_any().type_id() == kind {
                end += 1;
            }
        }
        if i > 0 {
            next_tick(tx, &*batch[i]).await?;
        }
        match form {
            Some(apply) if end - i > 1 => apply(&mut batch[i..end], tx).await?,
            _ => batch[i].apply(tx).await?,
        }
        i = end;
    }
    Ok(())
}

/// A write that changes the index takes the next tick of the change log,
/// not the one of the writes before it in the transaction (the clock row is
/// already this transaction's, so ticks stay in commit order, with no hole).
async fn next_tick(tx: &Transaction<'_>, write: &dyn QueuedWrite) -> DbResult<()> {
    if write.own_tick() {
        tx.execute(queries::NEXT_FEED_TICK, &[]).await?;
    }
    Ok(())
}
