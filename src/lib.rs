//! Lendex: a live index of a Solana lending program (README.md; the layers and
//! walks are in docs/architecture.md). The service crate, on top of the
//! workspace's layers, re-exported here by the names the code uses:
//!
//! - `domain`: the pure rules (WAD math, health factor, quotes, risk, history
//!   rules, account layouts, the signed message);
//! - `engine`: the health engine, pure: every owner in memory, ranked and scored;
//! - `wire`: every request and response body;
//! - `db`: PostgreSQL (migrations, named queries, write commands, the change log);
//! - `chain`: the RPC transport and the live sources; `ingest`: chain reads into
//!   index writes;
//! - `feed`: rendered answers, SSE frames and subscribers, the replay window;
//! - `actors` (the top-level `actors/` folder): the actors that own state.
//!
//! Its own modules:
//! - `error`: the one API error type, every layer's error mapped to the
//!   spec's bodies;
//! - `http`: routes, extractors, handlers, the console;
//! - `metrics`, `logging`, `config`;
//! - `app`: wires it all together; `operator`: the operator CLI's commands;
//!   `demo`: the demo market; `remote`: the signed client (`lendex remote`).

pub mod app;
pub mod config;
pub mod demo;
pub mod error;
pub mod http;
pub mod logging;
pub mod metrics;
pub mod operator;
pub mod remote;

/// The actors that own state, a crate of their own in the top-level `actors/`.
pub use lendex_actors as actors;
/// The chain at the edge: RPC transport, reads, live sources (`crates/chain`).
pub use lendex_chain as chain;
/// The pure rules, a crate of their own (`crates/domain`).
pub use lendex_domain as domain;
/// The health engine, pure, a crate of its own (`crates/engine`).
pub use lendex_engine as engine;
/// Chain reads into index writes, pure (`crates/ingest`).
pub use lendex_ingest as ingest;
/// The bytes: rendered answers, SSE frames, subscribers, replay (`crates/feed`).
pub use lendex_serve as serve;
/// PostgreSQL at the edge: migrations, queries, writes, the change log (`crates/store`).
pub use lendex_store as store;
/// Every request and response body, a crate of its own (`crates/wire`).
pub use lendex_wire as wire;
