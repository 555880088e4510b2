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
//! (This folder sits beside `src/` by design; `src/lib.rs` mounts it as `lendex::actors`.)

pub mod chain_reader;
pub mod chain_stream;
pub mod chain_sync;
pub mod db_writer;
pub mod health_cache;
pub mod history;
pub mod leader_lease;
pub mod nonce_registry;
