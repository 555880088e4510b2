//! The service's actors. Each owns one piece of state or one resource, and HTTP
//! handlers reach it only through typed messages:
//! - `nonce_registry`: issues and atomically consumes admin-handshake nonces;
//! - `db_writer`: the single path for writes, with group commit;
//! - `chain_reader`: the RPC client behind a global rate limit and concurrency cap;
//! - `chain_sync`: the background refresh of every registered pool and its positions,
//!   on the replica holding the cluster's ingester lease (`leader_lease`);
//! - `health_cache`: account health factors in memory, the unhealthy ranking and feed;
//! - `history`: stores what the leader's engine records of history, and keeps its
//!   day partitions.
//!
//! Beside them: `settings` (what they read of config.toml), `error` (their one
//! error, mapped to the spec's bodies by the HTTP edge) and `metrics` (the
//! series they record).
//!
//! A crate of its own, in the top-level folder the design card names: it sees
//! the layers below (domain, engine, store, chain, ingest, feed) and never the
//! HTTP server above it (docs/architecture.md).

pub mod chain_reader;
mod chain_stream;
pub mod chain_sync;
mod chain_tip;
pub mod db_writer;
pub mod error;
pub mod health_cache;
pub mod history;
pub mod leader_lease;
pub mod metrics;
pub mod nonce_registry;
pub mod settings;
pub mod webhooks;

// The layers below, by the names the service gives them.
use lendex_chain as chain;
use lendex_domain as domain;
use lendex_engine as engine;
use lendex_ingest as ingest;
use lendex_serve as serve;
use lendex_wire as wire;
