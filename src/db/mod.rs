//! PostgreSQL at the edge: the connection pool, the migration runner and the
//! named queries. Reads are made here directly by handlers; writes go through the
//! database-writer actor.

pub mod chain_writes;
pub mod migrate;
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
