//! PostgreSQL at the edge: the connection pool, the migration runner and the
//! named queries. Reads are made here directly by handlers; writes go through the
//! database-writer actor.

pub mod chain_writes;
pub mod migrate;
pub mod nonces;
pub mod numeric;
pub mod queries;
pub mod rows;
pub mod writes;

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime, Timeouts};
use tokio_postgres::NoTls;

use crate::config::DatabaseConfig;

/// Builds the shared connection pool. Connections are made lazily, so the service
/// starts (and reports itself degraded) while the database is down.
pub fn connect_pool(cfg: &DatabaseConfig) -> Result<Pool, String> {
    let pg_config: tokio_postgres::Config = cfg
        .url
        .parse()
        .map_err(|e| format!("bad database.url: {e}"))?;
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
        .map_err(|e| format!("cannot build database pool: {e}"))
}

/// The connection of one writer lane (`actors::db_writer`): one at a time, made
/// within a tenth of `write_timeout`, and with PostgreSQL ending a statement
/// that waits for a lock over 40% of it or runs over half of it, so a stalled
/// table answers 503 within the bound instead of hanging the lane.
pub fn writer_pool(cfg: &DatabaseConfig, write_timeout: Duration) -> Result<Pool, String> {
    let mut pg_config: tokio_postgres::Config = cfg
        .url
        .parse()
        .map_err(|e| format!("bad database.url: {e}"))?;
    let ms = |d: Duration| d.as_millis().max(1);
    pg_config.options(format!(
        "-c lock_timeout={} -c statement_timeout={}",
        ms(write_timeout * 2 / 5),
        ms(write_timeout / 2)
    ));
    let manager = Manager::from_config(
        pg_config,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let connect = write_timeout / 10;
    Pool::builder(manager)
        .max_size(1)
        .runtime(Runtime::Tokio1)
        .timeouts(Timeouts {
            wait: Some(connect),
            create: Some(connect),
            recycle: Some(connect),
        })
        .build()
        .map_err(|e| format!("cannot build database pool: {e}"))
}
