//! Composition root: builds the database pool, runs migrations, starts the actors
//! and the HTTP server, and wires them together through `AppState`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use actix_web::web;

use crate::actors::chain_reader::ChainReader;
use crate::actors::chain_sync::{ChainDeps, ChainSync};
use crate::actors::db_writer::Writers;
use crate::actors::health_cache::{
    AwaitListening, CloseStreams, FlushWrites, HealthCache, HistoryLink, LoadAll, NamedFeeds,
    Settings as CacheSettings, WebhookLink,
};
use crate::actors::history::{Flush, HistoryWriter};
use crate::actors::leader_lease::hold_lease;
use crate::actors::nonce_registry::NonceRegistry;
use crate::actors::webhooks::deliverer::Deliverer;
use crate::actors::webhooks::producer::Producer;
use crate::config::Config;
use crate::domain::forks::Commitment;
use crate::domain::pubkey::parse_pubkey;
use crate::domain::view_key::{Oracle, ViewKey};
use crate::error::StartError;
use crate::http;
use crate::http::drain::Drain;
use crate::http::held_polls::HeldPolls;
use crate::http::rate_limit::PublicWriteLimiter;
use crate::http::state::AppState;
use crate::http::view_key::RenderedViews;
use crate::ingest::Ingest;
use crate::serve::gate::StreamGate;
use crate::store::Store;

/// A started service: the server future to await, where it listens, and the writer
/// to drain after the server has stopped.
pub struct Service {
    pub server: actix_web::dev::Server,
    pub addrs: Vec<SocketAddr>,
    pub writer: Writers,
    pub cache: Addr<HealthCache>,
    /// History's writer (None when history is off).
    pub history: Option<Addr<HistoryWriter>>,
    /// The stop sequence's hold on the health check and the held polls.
    pub drain: Drain,
}

/// Starts everything inside the current actix system. The database may be down:
/// the server starts anyway, reports itself degraded, and migrates once it is up.
pub async fn start(config: Config) -> Result<Service, StartError> {
    let config = Arc::new(config);
    let store = Store::connect(&config.database)?;
    migrate_until_done(store.clone(), config.auth.super_admin_pubkey.clone()).await?;

    // This replica's name in the NOTIFY of its own writes (sql/functions.sql).
    let origin = format!("{:016x}", rand::random::<u64>());
    let writer = Writers::start(&config.database, &origin)?;
    let nonces = NonceRegistry::new(
        store.pool().clone(),
        writer.clone(),
        Duration::from_secs(config.auth.nonce_ttl_seconds),
        config.auth.max_nonces_per_wallet,
        Duration::from_secs(config.auth.purge_interval_seconds.max(1)),
    )
    .start();
    let chain = ChainReader::new(&config.rpc).start();
    let ingest = Ingest {
        program: parse_pubkey(&config.chain.program_id).map_err(StartError::Config)?,
        cluster: config.chain.cluster.as_str(),
        receiver: match config.oracle.feeds {
            true => {
                Some(parse_pubkey(&config.oracle.receiver_program).map_err(StartError::Config)?)
            }
            false => None,
        },
    };
    let history = if config.history.enabled() {
        Some(start_history_writer(&config)?)
    } else {
        None
    };
    let link = history.clone().map(|writer| {
        HistoryLink::new(
            writer,
            Duration::from_secs(config.history.market_interval_seconds),
        )
    });
    // One replica of the cluster ingests, records history and writes the
    // health factors back: the holder of the lease, when anything needs one.
    // Webhooks are delivered by the lease's holder, so every replica takes
    // part in the lease (docs/design.md §18).
    let leased = true;
    // The feed accounts the pools name: told by the cache, followed by the
    // chain work (docs/design.md §17).
    let named_feeds = NamedFeeds::new(Arc::default());
    let followed = config.oracle.feeds.then(|| named_feeds.subscribe());
    let settings = CacheSettings {
        cache: &config.cache,
        health: &config.health,
        database_url: &config.database.url,
        cluster: config.chain.cluster.as_str(),
        rpc_url: &config.rpc.url,
        processed: config.rpc.commitment == crate::domain::forks::Commitment::Processed,
        named_feeds: config.oracle.feeds.then_some(named_feeds),
    };
    // Every replica judges each change for webhooks; the leader stores and
    // delivers (docs/design.md §18), on a thread of their own.
    let (producer, deliverer) = start_webhooks(&config)?;
    let (producer, filters) = producer;
    let cache = HealthCache::new(
        store.pool().clone(),
        writer.clone(),
        origin,
        settings,
        link,
        leased,
    )
    .with_webhooks(WebhookLink::new(filters, producer.clone().recipient()));
    let views = RenderedViews {
        confirmed: cache.rendered(),
        processed: cache.rendered_of(ViewKey::new(Commitment::Processed, Oracle::Pool)),
        feed: cache.rendered_of(ViewKey::new(Commitment::Confirmed, Oracle::Feed)),
        processed_feed: cache.rendered_of(ViewKey::new(Commitment::Processed, Oracle::Feed)),
    };
    let cache = cache.start();
    let deps = ChainDeps {
        db: store.pool().clone(),
        chain: chain.clone(),
        writer: writer.clone(),
        cache: cache.clone(),
        ingest,
        feeds: followed,
    };
    let sync = ChainSync::new(deps, &config.rpc, &config.sync).start();
    // Both are told when the lease is taken and lost.
    if leased {
        let told = vec![
            sync.clone().recipient(),
            cache.clone().recipient(),
            deliverer.clone().recipient(),
            producer.recipient(),
        ];
        actix_rt::spawn(hold_lease(
            config.database.url.clone(),
            config.chain.cluster.as_str(),
            told,
        ));
    }

    // Listen first, then load: a change committed in between is then announced.
    // Bounded: with the database down, start goes on and the reconnecting
    // listener reloads everything once it is up.
    let listen_wait = Duration::from_millis(config.database.acquire_timeout_ms);
    if tokio::time::timeout(listen_wait, cache.send(AwaitListening))
        .await
        .is_err()
    {
        tracing::warn!("LISTEN connection not up at start; loading anyway");
    }
    // Serve the feed from a loaded cache; if the database is down, the cache keeps
    // retrying in the background and the feed answers 503 until it is loaded.
    if !matches!(cache.send(LoadAll).await, Ok(Ok(()))) {
        tracing::warn!("health-factor cache not loaded at start; retrying in the background");
    }

    let drain = Drain::default();
    let state = web::Data::new(AppState {
        cluster: config.chain.cluster,
        ingest,
        store,
        writer: writer.clone(),
        nonces,
        chain,
        sync,
        cache: cache.clone(),
        views,
        limiter: PublicWriteLimiter::new(&config.limits),
        held_polls: HeldPolls::new(config.server.max_held_polls),
        streams: StreamGate::new(config.server.max_streams_per_ip, config.server.max_streams),
        metrics: crate::metrics::install(),
        history: history.clone(),
        deliverer,
        drain: drain.clone(),
        config: config.clone(),
    });
    forget_idle_clients(state.clone());

    let http::server::Listening { server, addrs } = http::server::start(state, &config.server)?;
    tracing::info!(?addrs, cluster = config.chain.cluster.as_str(), rpc = %config.rpc.url, "lendex listening");
    Ok(Service {
        server,
        addrs,
        writer,
        cache,
        history,
        drain,
    })
}

/// Runs the service until SIGINT/SIGTERM: the replica drains (its health check
/// fails for `server.drain_ms` while it still answers, so a balancer moves
/// away first), stops accepting, ends its streams and held polls, finishes its
/// in-flight requests, then every queued write is flushed before returning.
pub async fn serve(config: Config) -> Result<(), StartError> {
    let drain_for = Duration::from_millis(config.server.drain_ms);
    let service = start(config).await?;
    let (handle, cache, drain) = (
        service.server.handle(),
        service.cache.clone(),
        service.drain.clone(),
    );
    actix_rt::spawn(async move {
        stop_signal().await;
        drain.begin();
        tracing::info!(
            drain_ms = drain_for.as_millis() as u64,
            "stopping: health fails while the balancer moves away"
        );
        // A second signal skips the wait: an operator in a hurry.
        tokio::select! {
            () = tokio::time::sleep(drain_for) => {}
            () = stop_signal() => {}
        }
        tracing::info!("stopping: no new connections; ending feed streams; finishing requests");
        // Stop accepting first, then end the SSE streams and held polls (they
        // would keep a graceful stop waiting); requests in flight finish.
        drain.close();
        let stopped = handle.stop(true);
        let _ = cache.send(CloseStreams).await;
        stopped.await;
    });
    let result = service.server.await.map_err(StartError::Serve);
    // Queued writes: the cache's pending health factors, then everything the
    // writer holds, then the history waiting to be stored.
    let _ = service.cache.send(FlushWrites).await;
    service.writer.drain().await;
    if let Some(history) = &service.history {
        let stored = tokio::time::timeout(HISTORY_FLUSH_AT_STOP, history.send(Flush)).await;
        if !matches!(stored, Ok(Ok(true))) {
            tracing::warn!("history still queued at stop could not all be stored");
        }
    }
    tracing::info!("lendex stopped; all acknowledged writes are committed");
    crate::logging::flush(Duration::from_millis(500));
    result
}

/// History's writer on a thread of its own with connections of its own: what
/// it encodes and copies never holds up the health cache or the feed.
fn start_history_writer(config: &Config) -> Result<Addr<HistoryWriter>, StartError> {
    let own = Store::connect(&crate::config::DatabaseConfig {
        pool_size: 2,
        ..config.database.clone()
    })?;
    let (cluster, history) = (config.chain.cluster.as_str(), config.history.clone());
    let arbiter = actix::Arbiter::new();
    Ok(HistoryWriter::start_in_arbiter(
        &arbiter.handle(),
        move |_| HistoryWriter::new(own.pool().clone(), cluster, &history),
    ))
}

/// The webhooks' producer and deliverer on a thread of their own, with
/// connections of their own: the deliveries' JSON, their storing and their
/// HTTP never hold up the cache or the feed. The producer, with the active
/// webhooks it keeps current for the judging, and the deliverer.
#[allow(clippy::type_complexity)]
fn start_webhooks(
    config: &Config,
) -> Result<
    (
        (
            Addr<Producer>,
            tokio::sync::watch::Receiver<Arc<Vec<crate::domain::webhooks::judge::Filter>>>,
        ),
        Addr<Deliverer>,
    ),
    StartError,
> {
    let own = Store::connect(&crate::config::DatabaseConfig {
        pool_size: 3,
        ..config.database.clone()
    })?;
    let (cluster, settings) = (config.chain.cluster.as_str(), config.webhooks.clone());
    let arbiter = actix::Arbiter::new().handle();
    let pool = own.pool().clone();
    let deliverer =
        Deliverer::start_in_arbiter(&arbiter, move |_| Deliverer::new(pool, cluster, settings));
    let (producer, filters) =
        Producer::new(own.pool().clone(), cluster, deliverer.clone().recipient());
    let producer = Producer::start_in_arbiter(&arbiter, move |_| producer);
    Ok(((producer, filters), deliverer))
}

/// How long a stop waits for queued history to be stored.
const HISTORY_FLUSH_AT_STOP: Duration = Duration::from_secs(10);

/// Resolves on SIGINT or SIGTERM.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => {
            tracing::error!("cannot listen for stop signals; stopping on Ctrl-C only");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Migrates now if the database answers; otherwise keeps retrying in the background
/// so the service can start degraded. A migration that fails on SQL is fatal.
async fn migrate_until_done(store: Store, super_admin: String) -> Result<(), StartError> {
    match store.migrate(&super_admin).await {
        Ok(applied) => {
            if !applied.is_empty() {
                tracing::info!(?applied, "migrations applied");
            }
            Ok(())
        }
        Err(e) if e.is_unavailable() => {
            tracing::error!(error = %e, "database unavailable at start; retrying migrations in the background");
            actix_rt::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    match store.migrate(&super_admin).await {
                        Ok(_) => {
                            tracing::info!("database reachable; migrations done");
                            break;
                        }
                        Err(e) => tracing::warn!(error = %e, "migrations still pending"),
                    }
                }
            });
            Ok(())
        }
        Err(e) => Err(StartError::Migration(e)),
    }
}

fn forget_idle_clients(state: web::Data<AppState>) {
    actix_rt::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(60));
        loop {
            tick.tick().await;
            state.limiter.forget_idle();
        }
    });
}
