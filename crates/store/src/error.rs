//! The store's error: the database could not be reached in time, or a
//! statement (or a stored value) failed. Each keeps its cause; the HTTP edge
//! maps them to 503 `database unavailable` and 500 `internal error`
//! (`error.rs`, docs/design.md §4.17).

use std::error::Error;
use std::sync::Arc;

type Cause = Arc<dyn Error + Send + Sync>;

#[derive(Clone)]
pub enum DbError {
    /// Lost, refused or timed out: the caller may retry (503).
    Unavailable(Cause),
    /// PostgreSQL refused the statement, or a stored value is not what the
    /// schema promises: ours to fix (500).
    Failed(Cause),
}

pub type DbResult<T> = Result<T, DbError>;

impl DbError {
    /// A failure that is not the database being away, because of `cause`.
    pub fn failed(cause: impl Into<Box<dyn Error + Send + Sync>>) -> DbError {
        DbError::Failed(Arc::from(cause.into()))
    }

    /// The database away (or not yet ready to answer), because of `cause`.
    pub fn unavailable(cause: impl Into<Box<dyn Error + Send + Sync>>) -> DbError {
        DbError::Unavailable(Arc::from(cause.into()))
    }

    pub fn is_unavailable(&self) -> bool {
        matches!(self, DbError::Unavailable(_))
    }

    /// The same failure, said to have happened while doing `what`.
    pub fn during(self, what: &str) -> DbError {
        match self {
            DbError::Failed(cause) => DbError::failed(format!("{what}: {cause}")),
            unavailable => unavailable,
        }
    }

    fn cause(&self) -> &Cause {
        match self {
            DbError::Unavailable(c) | DbError::Failed(c) => c,
        }
    }
}

/// A lost or refused connection, a timeout or a lock wait is the database being
/// unavailable; an error PostgreSQL raised about the statement itself is ours.
impl From<tokio_postgres::Error> for DbError {
    fn from(err: tokio_postgres::Error) -> Self {
        match err.code().map(|c| c.code()) {
            // 08: connection exception, 53: insufficient resources, 57: operator
            // intervention (shutdown, cancel, statement_timeout), 40:
            // serialization/deadlock, 55P03: lock_timeout (a table held elsewhere).
            Some(code) if !matches!(&code[..2], "08" | "53" | "57" | "40") && code != "55P03" => {
                DbError::Failed(Arc::new(err))
            }
            _ => DbError::Unavailable(Arc::new(err)),
        }
    }
}

impl From<deadpool_postgres::PoolError> for DbError {
    fn from(err: deadpool_postgres::PoolError) -> Self {
        DbError::Unavailable(Arc::new(err))
    }
}

/// The kind and the whole chain of causes: a log line of it says everything.
impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DbError::Unavailable(_) => "database unavailable",
            DbError::Failed(_) => "database statement failed",
        })?;
        let mut cause: Option<&(dyn Error + 'static)> = Some(self.cause().as_ref());
        while let Some(e) = cause {
            write!(f, ": {e}")?;
            cause = e.source();
        }
        Ok(())
    }
}

/// Its Display already carries the causes, so it names no source of its own
/// (a printer walking sources would say them twice).
impl Error for DbError {}

impl std::fmt::Debug for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

/// Two errors are equal when they say the same (tests compare them).
impl PartialEq for DbError {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

/// Why a connection pool could not be set up: a malformed `database.url`, or
/// the pool's own settings.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("bad database.url: {0}")]
    Url(#[source] tokio_postgres::Error),
    #[error("cannot build the connection pool: {0}")]
    Pool(#[source] deadpool_postgres::BuildError),
}
