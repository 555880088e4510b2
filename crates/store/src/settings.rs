//! The `[database]` settings (config.toml; the service's `config` module loads
//! them with the rest).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DatabaseConfig {
    pub url: String,
    pub pool_size: usize,
    pub acquire_timeout_ms: u64,
    /// Bound on a write's answer when the database is stalled (503 past it).
    pub write_timeout_ms: u64,
}
