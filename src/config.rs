//! Settings: `config.toml` (embedded as the defaults, so the binary runs anywhere),
//! then an optional file on disk, then the short environment names, then
//! `LENDEX_<SECTION>__<KEY>`. Later sources win.

use std::path::Path;

use figment::{
    Figment,
    providers::{Env, Format, Toml},
};
use serde::{Deserialize, Serialize};

use crate::domain::forks::Commitment;
use crate::domain::pubkey::parse_pubkey;
use crate::error::StartError;

/// The repository's `config.toml`, compiled in: every key has a working default.
pub const DEFAULT_CONFIG_TOML: &str = include_str!("../config.toml");

pub use lendex_actors::settings::{
    CacheConfig, HealthConfig, HistoryConfig, OracleConfig, SyncConfig, WebhooksConfig,
};
pub use lendex_chain::settings::{ChainSource, RpcConfig};
pub use lendex_store::settings::DatabaseConfig;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Config {
    pub server: ServerConfig,
    pub database: DatabaseConfig,
    pub rpc: RpcConfig,
    pub chain: ChainConfig,
    pub auth: AuthConfig,
    pub limits: LimitsConfig,
    pub sync: SyncConfig,
    pub cache: CacheConfig,
    pub health: HealthConfig,
    pub oracle: OracleConfig,
    pub metrics: MetricsConfig,
    pub history: HistoryConfig,
    pub webhooks: WebhooksConfig,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerConfig {
    pub bind: String,
    pub workers: usize,
    pub shutdown_timeout_seconds: u64,
    /// Time to receive a request's headers, and again its body; past it, 408.
    pub request_timeout_ms: u64,
    /// Long polls held at once (docs/design.md §11); past it they are answered at once.
    pub max_held_polls: usize,
    /// Open SSE streams per client address (an IPv6 client: per /64).
    pub max_streams_per_ip: usize,
    /// Open SSE streams in total.
    pub max_streams: usize,
    /// A request answered slower than this is logged at INFO even when its
    /// route is a polled read (docs/design.md §1).
    pub slow_request_ms: u64,
    /// On SIGTERM, how long the health check fails while requests are still
    /// answered, before streams close and the server stops (docs/design.md §13).
    pub drain_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChainConfig {
    pub program_id: String,
    pub cluster: Cluster,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AuthConfig {
    pub super_admin_pubkey: String,
    pub nonce_ttl_seconds: u64,
    pub max_nonces_per_wallet: u32,
    pub purge_interval_seconds: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LimitsConfig {
    pub public_write_per_second: u32,
    pub public_write_burst: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MetricsConfig {
    /// Serve GET /metrics to any client, not only to loopback ones.
    pub public: bool,
}

/// The cluster the service indexes; rows carry it and reads filter on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Cluster {
    Mainnet,
    Devnet,
    Localnet,
}

impl Cluster {
    pub fn as_str(self) -> &'static str {
        match self {
            Cluster::Mainnet => "mainnet",
            Cluster::Devnet => "devnet",
            Cluster::Localnet => "localnet",
        }
    }
}

/// Short environment names that operators and harnesses use, and the key each sets.
const SHORT_ENV_NAMES: &[(&str, &str)] = &[
    ("DATABASE_URL", "database.url"),
    ("RPC_URL", "rpc.url"),
    ("WS_URL", "rpc.ws_url"),
    ("GRPC_URL", "rpc.grpc_url"),
    ("GRPC_X_TOKEN", "rpc.grpc_x_token"),
    ("CLUSTER", "chain.cluster"),
    ("PROGRAM_ID", "chain.program_id"),
    ("SUPER_ADMIN_PUBKEY", "auth.super_admin_pubkey"),
    ("BIND_ADDR", "server.bind"),
];

impl Config {
    /// Loads the settings from the embedded defaults, `path` if it exists, and the environment.
    pub fn load(path: Option<&Path>) -> Result<Config, StartError> {
        let mut figment = Figment::from(Toml::string(DEFAULT_CONFIG_TOML));
        if let Some(path) = path {
            if path.exists() {
                figment = figment.merge(Toml::file(path));
            } else if path != Path::new("config.toml") {
                return Err(StartError::Config(format!(
                    "config file {} not found",
                    path.display()
                )));
            }
        }
        for (name, key) in SHORT_ENV_NAMES {
            if let Ok(value) = std::env::var(name) {
                // Set as a string: a value such as a program id must never be re-typed.
                figment = figment.merge((*key, value));
            }
        }
        figment = figment.merge(Env::prefixed("LENDEX_").split("__").ignore(&["log_format"]));
        let config: Config = figment
            .extract()
            .map_err(|e| StartError::Config(e.to_string()))?;
        config.validate().map_err(StartError::Config)?;
        Ok(config)
    }

    /// The embedded defaults alone (tests start from these).
    pub fn defaults() -> Config {
        Figment::from(Toml::string(DEFAULT_CONFIG_TOML))
            .extract()
            .expect("embedded config.toml is valid")
    }

    pub fn validate(&self) -> Result<(), String> {
        parse_pubkey(&self.chain.program_id)
            .map_err(|e| format!("chain.program_id is not a pubkey: {e}"))?;
        if !self.auth.super_admin_pubkey.is_empty() {
            parse_pubkey(&self.auth.super_admin_pubkey)
                .map_err(|e| format!("SUPER_ADMIN_PUBKEY is not a pubkey: {e}"))?;
        }
        parse_pubkey(&self.oracle.receiver_program)
            .map_err(|e| format!("oracle.receiver_program is not a pubkey: {e}"))?;
        if self.database.pool_size < 2 {
            return Err("database.pool_size must be at least 2".into());
        }
        if self.rpc.max_rps == 0 || self.rpc.max_concurrency == 0 {
            return Err("rpc.max_rps and rpc.max_concurrency must be positive".into());
        }
        if self.rpc.source == ChainSource::Grpc && self.rpc.grpc_url.is_empty() {
            return Err("rpc.source = \"grpc\" needs rpc.grpc_url (GRPC_URL)".into());
        }
        if self.rpc.commitment == Commitment::Processed && self.rpc.source != ChainSource::Grpc {
            return Err(
                "rpc.commitment = \"processed\" needs rpc.source = \"grpc\" (the websocket \
                 source carries no slot statuses or forks)"
                    .into(),
            );
        }
        if self.rpc.max_unconfirmed_slots == 0 {
            return Err("rpc.max_unconfirmed_slots must be positive".into());
        }
        if self.auth.nonce_ttl_seconds == 0 {
            return Err("auth.nonce_ttl_seconds must be positive".into());
        }
        if self.history.enabled()
            && (self.history.market_interval_seconds == 0 || self.history.max_pending == 0)
        {
            return Err(
                "history.market_interval_seconds and history.max_pending must be positive".into(),
            );
        }
        if self.history.flush_interval_ms == 0 || self.history.flush_interval_ms > 1000 {
            return Err(
                "history.flush_interval_ms must be 1 to 1000 (flushed at least once a second)"
                    .into(),
            );
        }
        if self.server.max_streams_per_ip == 0 || self.server.max_streams == 0 {
            return Err("server.max_streams_per_ip and server.max_streams must be positive".into());
        }
        if self.webhooks.timeout_ms == 0 || self.webhooks.retry_seconds == 0 {
            return Err("webhooks.timeout_ms and webhooks.retry_seconds must be positive".into());
        }
        if self.cache.change_log_seconds == 0 {
            return Err("cache.change_log_seconds must be positive".into());
        }
        Ok(())
    }
}
