//! The settings the actors read (config.toml's `[sync]`, `[cache]`, `[health]`,
//! `[oracle]`, `[history]` and `[webhooks]`; the service's `config` module loads them with the rest).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SyncConfig {
    pub interval_seconds: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CacheConfig {
    pub max_owners: usize,
    /// Unread feed bytes one SSE subscriber may hold beyond its snapshot.
    pub subscriber_max_lag_bytes: usize,
    /// Bytes of recent feed events a reconnect can resume from.
    pub replay_bytes: usize,
    /// Seconds of the change log kept: a replica further behind
    /// reloads everything instead of applying the log.
    pub change_log_seconds: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HealthConfig {
    pub max_oracle_age_seconds: u64,
}

/// `[oracle]`: the pools' Pyth feeds (docs/design.md §17).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OracleConfig {
    /// Read the feeds and serve the feed valuation.
    pub feeds: bool,
    /// The owner of feed accounts (base58).
    pub receiver_program: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HistoryConfig {
    /// Days of history kept (whole UTC days); 0 disables history.
    pub retention_days: u32,
    /// Seconds between two samples of the market.
    pub market_interval_seconds: u64,
    /// Records waiting to be stored at most; past it the oldest are dropped.
    pub max_pending: usize,
    /// Milliseconds between two flushes of what is waiting.
    pub flush_interval_ms: u64,
}

impl HistoryConfig {
    pub fn enabled(&self) -> bool {
        self.retention_days > 0
    }
}

/// `[webhooks]` (docs/design.md §18).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WebhooksConfig {
    /// Webhooks registered at most (a create past it is refused).
    pub max: usize,
    /// An attempt not answered within this is failed (and retried).
    pub timeout_ms: u64,
    /// How long a delivery is retried before it fails and disables its webhook.
    pub retry_seconds: u64,
    /// Accept targets on loopback, private, shared, link-local and
    /// unspecified addresses (tests, private networks).
    pub allow_private_targets: bool,
}
