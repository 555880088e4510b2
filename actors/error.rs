//! The actors' one error: a failure on the server's side, its cause kept for
//! the log, never for a body. The HTTP edge answers each with the spec's body
//! (docs/design.md §4.17): the store's failures as the store judges them
//! (away: 503, ours: 500), the chain's RPC away 502, anything else 500.

use std::error::Error;
use std::sync::Arc;

use lendex_store::error::DbError;

type Cause = Arc<dyn Error + Send + Sync>;

#[derive(Clone)]
pub enum ActorError {
    /// The database away, or a statement of ours that failed.
    Store(DbError),
    /// The chain's RPC failed or did not answer in time.
    Rpc(Cause),
    /// Ours: an actor gone, a reply dropped, a promise broken.
    Internal(Cause),
}

pub type ActorResult<T> = Result<T, ActorError>;

impl ActorError {
    /// The database away (or not ready to answer yet), because of `cause`.
    pub fn database(cause: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        ActorError::Store(DbError::unavailable(cause))
    }

    /// The chain's RPC away, because of `cause`.
    pub fn rpc(cause: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        ActorError::Rpc(Arc::from(cause.into()))
    }

    /// Ours, because of `cause`.
    pub fn internal(cause: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        ActorError::Internal(Arc::from(cause.into()))
    }
}

impl ActorError {
    /// What failed, in the words of the error body the HTTP edge would answer
    /// (a status page says it; the cause stays in the log).
    pub fn kind(&self) -> &'static str {
        match self {
            ActorError::Store(err) if err.is_unavailable() => "database unavailable",
            ActorError::Rpc(_) => "rpc unavailable",
            ActorError::Store(_) | ActorError::Internal(_) => "internal error",
        }
    }
}

impl From<DbError> for ActorError {
    fn from(err: DbError) -> Self {
        ActorError::Store(err)
    }
}

/// Statements run outside the store's commands (the lease, the history
/// checkpoint) are judged as the store judges them.
impl From<tokio_postgres::Error> for ActorError {
    fn from(err: tokio_postgres::Error) -> Self {
        ActorError::Store(err.into())
    }
}

impl From<deadpool_postgres::PoolError> for ActorError {
    fn from(err: deadpool_postgres::PoolError) -> Self {
        ActorError::Store(err.into())
    }
}

/// An actor that could not take or answer a message (stopped, or its mailbox full).
impl From<actix::MailboxError> for ActorError {
    fn from(err: actix::MailboxError) -> Self {
        ActorError::internal(format!("actor mailbox: {err}"))
    }
}

/// A reply that never came: its sender was dropped unanswered.
impl From<tokio::sync::oneshot::error::RecvError> for ActorError {
    fn from(err: tokio::sync::oneshot::error::RecvError) -> Self {
        ActorError::internal(format!("reply dropped: {err}"))
    }
}

/// The kind and the whole chain of causes: a log line of it says everything.
impl std::fmt::Display for ActorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (kind, cause): (&str, &(dyn Error + 'static)) = match self {
            ActorError::Store(err) => return write!(f, "{err}"),
            ActorError::Rpc(cause) => ("rpc unavailable", cause.as_ref()),
            ActorError::Internal(cause) => ("internal error", cause.as_ref()),
        };
        write!(f, "{kind}: {cause}")?;
        let mut source = cause.source();
        while let Some(e) = source {
            write!(f, ": {e}")?;
            source = e.source();
        }
        Ok(())
    }
}

impl std::fmt::Debug for ActorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

/// Its Display already carries the causes.
impl Error for ActorError {}

/// Two errors are equal when they say the same (tests compare them).
impl PartialEq for ActorError {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}
