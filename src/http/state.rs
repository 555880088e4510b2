//! What every handler can reach. The composition root (`app`) builds it; HTTP
//! code depends on this, never on the composition root.

use std::sync::Arc;

use actix::Addr;
use deadpool_postgres::Pool;

use crate::actors::chain_reader::ChainReader;
use crate::actors::chain_sync::ChainSync;
use crate::actors::db_writer::Writers;
use crate::actors::health_cache::HealthCache;
use crate::actors::nonce_registry::NonceRegistry;
use crate::config::{Cluster, Config};
use crate::domain::pubkey::Pubkey;
use crate::engine::answers::SharedRendered;
use crate::http::rate_limit::PublicWriteLimiter;

/// What every handler can reach: actor addresses, the read pool, the settings.
pub struct AppState {
    pub config: Arc<Config>,
    pub cluster: Cluster,
    /// The lending program whose accounts are indexed.
    pub program_id: Pubkey,
    pub db: Pool,
    pub writer: Writers,
    pub nonces: Addr<NonceRegistry>,
    pub chain: Addr<ChainReader>,
    pub sync: Addr<ChainSync>,
    pub cache: Addr<HealthCache>,
    /// The cache's rendered unhealthy answers, read without a round trip.
    pub rendered: SharedRendered,
    pub limiter: PublicWriteLimiter,
    /// Renders the Prometheus series (GET /metrics).
    pub metrics: crate::metrics::Metrics,
}
