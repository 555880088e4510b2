//! PostgreSQL at the edge: the connection pool, the migration runner, the
//! named queries and their typed rows, the write commands, and the LISTEN
//! connection. Reads are made here; writes are applied by the database-writer
//! actor, which commits them.

pub mod chain_tip;
pub mod chain_writes;
pub mod change_clock;
pub mod change_log;
pub mod engine_rows;
pub mod error;
mod handle;
pub mod history;
pub mod listen;
pub mod migrate;
pub mod nonces;
pub mod numeric;
pub mod overlay;
pub mod queries;
pub mod reads;
pub mod registered;
mod rows;
pub mod settings;
pub mod webhooks;
pub mod writes;

pub use handle::{Session, Store};

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime, Timeouts};
use tokio_postgres::NoTls;

use crate::error::SetupError;
use crate::settings::DatabaseConfig;

/// Builds the shared connection pool. Connections are made lazily, so the service
/// starts (and reports itself degraded) while the database is down.
pub fn connect_pool(cfg: &DatabaseConfig) -> Result<Pool, SetupError> {
    let pg_config: tokio_postgres::Config = cfg.url.parse().map_err(SetupError::Url)?;
    let manager = Manager::from_config(
        pg_config,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let wait = Duration::from_millis(cfg.acquire_timeout_ms);
    Pool::builder(manager)
        .max_size(cfg.pool_size)
        .runtime(Runtime::Tokio1)
        .timeouts(Timeouts {
            wait: Some(wait),
            create: Some(wait),
            recycle: Some(wait),
        })
        .build()
        .map_err(SetupError::Pool)
}

/// How a write's time bound (`database.write_timeout_ms`) is shared out: a write
/// may wait in its lane's queue 40% of it, its batch 10% for a connection and
/// 50% to run; PostgreSQL ends a statement that waits for a lock over 40% or
/// runs over the run share. The one place these shares are set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteBudget {
    pub queue: Duration,
    pub connect: Duration,
    pub run: Duration,
    pub lock: Duration,
}

impl WriteBudget {
    pub fn of(bound: Duration) -> WriteBudget {
        WriteBudget {
            queue: bound * 2 / 5,
            connect: bound / 10,
            run: bound / 2,
            lock: bound * 2 / 5,
        }
    }
}

/// The connection of one writer lane (`actors::db_writer`): one at a time, made
/// within the budget's connect share, and with PostgreSQL's lock_timeout and
/// statement_timeout set from it, so a stalled table answers 503 within the
/// bound instead of hanging the lane.
pub fn writer_pool(
    cfg: &DatabaseConfig,
    budget: WriteBudget,
    origin: &str,
) -> Result<Pool, SetupError> {
    let mut pg_config: tokio_postgres::Config = cfg.url.parse().map_err(SetupError::Url)?;
    let ms = |d: Duration| d.as_millis().max(1);
    // lendex.origin names this replica in the NOTIFY of its own writes (sql/0006).
    pg_config.options(format!(
        "-c lock_timeout={} -c statement_timeout={} -c lendex.origin={origin}",
        ms(budget.lock),
        ms(budget.run)
    ));
    let manager = Manager::from_config(
        pg_config,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let connect = budget.connect;
    Pool::builder(manager)
        .max_size(1)
        .runtime(Runtime::Tokio1)
        .timeouts(Timeouts {
            wait: Some(connect),
            create: Some(connect),
            recycle: Some(connect),
        })
        .build()
        .map_err(SetupError::Pool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_fits_its_bound() {
        for ms in [1, 999, 5000, 60_000] {
            let bound = Duration::from_millis(ms);
            let b = WriteBudget::of(bound);
            assert!(b.queue + b.connect + b.run <= bound, "{ms} ms: {b:?}");
            assert!(b.lock <= b.run, "a lock wait ends inside the run share");
        }
    }
}
