//! The database writer: every write of the index, the transaction log, the
//! allowlist and the audit log goes through this actor. (Handshake nonces are
//! the nonce registry's own: spending one is an authentication step, see there.)
//!
//! It serialises writes and batches them (group commit): while one transaction is
//! committing, new writes queue up; the next flush applies the whole queue in one
//! transaction, each write inside its own savepoint so one failing write does not
//! sink the others. A caller's reply is sent only after COMMIT returned, so a 2xx
//! always means the row is durable.

use actix::prelude::*;
use deadpool_postgres::Pool;
use futures_util::future::BoxFuture;
use tokio::sync::oneshot;

use crate::db::writes::WriteCommand;
use crate::error::{ApiError, ApiResult};

/// Most writes applied in one transaction.
const MAX_BATCH: usize = 256;

/// Ask the writer to apply `C` and answer with its output once committed.
pub struct Write<C: WriteCommand>(pub C);

impl<C: WriteCommand> Message for Write<C> {
    type Result = ApiResult<C::Output>;
}

/// Resolves once every write queued before it has been committed (or failed).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Drain;

pub struct DbWriter {
    pool: Pool,
    queue: Vec<Box<dyn QueuedWrite>>,
    flushing: bool,
    drain_waiters: Vec<oneshot::Sender<()>>,
}

impl DbWriter {
    pub fn new(pool: Pool) -> DbWriter {
        DbWriter {
            pool,
            queue: Vec::new(),
            flushing: false,
            drain_waiters: Vec::new(),
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
        self.flushing = true;
        let take = self.queue.len().min(MAX_BATCH);
        let batch: Vec<_> = self.queue.drain(..take).collect();
        let pool = self.pool.clone();
        ctx.spawn(flush(pool, batch).into_actor(self).map(|_, act, ctx| {
            act.flushing = false;
            act.start_flush(ctx);
        }));
    }
}

impl Actor for DbWriter {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(4096);
    }
}

impl<C: WriteCommand> Handler<Write<C>> for DbWriter {
    type Result = ResponseFuture<ApiResult<C::Output>>;

    fn handle(&mut self, msg: Write<C>, ctx: &mut Self::Context) -> Self::Result {
        let (reply, answer) = oneshot::channel();
        self.queue.push(Box::new(Pending {
            cmd: msg.0,
            result: None,
            reply: Some(reply),
        }));
        self.start_flush(ctx);
        Box::pin(async move { answer.await.unwrap_or(Err(ApiError::Internal)) })
    }
}

impl Handler<Drain> for DbWriter {
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

/// A queued write with its reply channel, its output type erased.
trait QueuedWrite: Send {
    /// Runs the command; keeps its result for `finish`. `Err` means it failed.
    fn apply<'a>(
        &'a mut self,
        tx: &'a deadpool_postgres::Transaction<'a>,
    ) -> BoxFuture<'a, Result<(), ()>>;
    /// Sends the reply: the command's result if the batch committed, else `failure`.
    fn finish(&mut self, failure: Option<ApiError>);
}

struct Pending<C: WriteCommand> {
    cmd: C,
    result: Option<ApiResult<C::Output>>,
    reply: Option<oneshot::Sender<ApiResult<C::Output>>>,
}

impl<C: WriteCommand> QueuedWrite for Pending<C> {
    fn apply<'a>(
        &'a mut self,
        tx: &'a deadpool_postgres::Transaction<'a>,
    ) -> BoxFuture<'a, Result<(), ()>> {
        Box::pin(async move {
            let result = self.cmd.apply(tx).await;
            let ok = result.is_ok();
            self.result = Some(result);
            if ok { Ok(()) } else { Err(()) }
        })
    }

    fn finish(&mut self, failure: Option<ApiError>) {
        let result = match (failure, self.result.take()) {
            // A command that failed on its own keeps its own error.
            (_, Some(Err(own))) => Err(own),
            (Some(batch_error), _) => Err(batch_error),
            (None, Some(ok)) => ok,
            (None, None) => Err(ApiError::Internal),
        };
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(result);
        }
    }
}

async fn flush(pool: Pool, mut batch: Vec<Box<dyn QueuedWrite>>) {
    let failure = apply_batch(&pool, &mut batch).await.err();
    if let Some(err) = &failure {
        tracing::warn!(error = %err, writes = batch.len(), "write batch not committed");
    }
    for write in batch.iter_mut() {
        write.finish(failure.clone());
    }
}

async fn apply_batch(pool: &Pool, batch: &mut [Box<dyn QueuedWrite>]) -> ApiResult<()> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    if let [only] = batch {
        // One write: no savepoint needed; if it failed, roll back and let it report.
        if only.apply(&tx).await.is_err() {
            tx.rollback().await?;
            return Ok(());
        }
    } else {
        for write in batch.iter_mut() {
            tx.batch_execute("SAVEPOINT w").await?;
            match write.apply(&tx).await {
                Ok(()) => tx.batch_execute("RELEASE SAVEPOINT w").await?,
                Err(()) => tx.batch_execute("ROLLBACK TO SAVEPOINT w").await?,
            }
        }
    }
    tx.commit().await?;
    Ok(())
}

/// Sends a write to the writer and waits for its committed result.
pub async fn write<C: WriteCommand>(writer: &Addr<DbWriter>, cmd: C) -> ApiResult<C::Output> {
    match writer.send(Write(cmd)).await {
        Ok(result) => result,
        Err(err) => {
            tracing::error!(error = %err, "database writer unreachable");
            Err(ApiError::DatabaseUnavailable)
        }
    }
}
