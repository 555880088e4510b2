//! What every handler can reach. The composition root (`app`) builds it; HTTP
//! code depends on this, never on the composition root.

use std::sync::Arc;

use actix::Addr;

use crate::actors::chain_reader::ChainReader;
use crate::actors::chain_sync::ChainSync;
use crate::actors::db_writer::Writers;
use crate::actors::health_cache::HealthCache;
use crate::actors::nonce_registry::NonceRegistry;
use crate::config::{Cluster, Config};
use crate::http::held_polls::HeldPolls;
use crate::http::rate_limit::PublicWriteLimiter;
use crate::http::view_key::RenderedViews;
use crate::ingest::Ingest;
use crate::serve::gate::StreamGate;
use crate::store::Store;

/// What every handler can reach: actor addresses, the store, the settings.
pub struct AppState {
    pub config: Arc<Config>,
    pub cluster: Cluster,
    /// The one ingest step: the lending program's accounts, as this cluster's rows.
    pub ingest: Ingest,
    /// Every read of PostgreSQL goes through the store's functions.
    pub store: Store,
    pub writer: Writers,
    pub nonces: Addr<NonceRegistry>,
    pub chain: Addr<ChainReader>,
    pub sync: Addr<ChainSync>,
    pub cache: Addr<HealthCache>,
    /// The cache's rendered answers of each view served, read without a
    /// round trip (docs/design.md §15, §17).
    pub views: RenderedViews,
    pub limiter: PublicWriteLimiter,
    /// Long polls held now, capped (`server.max_held_polls`).
    pub held_polls: HeldPolls,
    /// Open SSE streams, capped per client and in total.
    pub streams: Arc<StreamGate>,
    /// Renders the Prometheus series (GET /metrics).
    pub metrics: crate::metrics::Metrics,
    /// History's writer (None when history is off).
    pub history: Option<Addr<crate::actors::history::HistoryWriter>>,
    /// Serving, or on the way out from behind the balancer.
    /// The leader's webhook deliverer (idle on a follower).
    pub deliverer: Addr<crate::actors::webhooks::deliverer::Deliverer>,
    pub drain: crate::http::drain::Drain,
}
