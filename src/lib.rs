//! Lendex: a live index of a Solana lending program (README.md; the layers and
//! walks are in docs/architecture.md).
//!
//! - `domain`: the pure rules, the crate `crates/domain` (WAD math, health
//!   factor, quotes, risk, history rules, account layouts, the signed message);
//! - `engine`: the health engine, pure: every owner in memory, ranked and scored;
//! - `wire`: every request and response body; `error`: the one API error type;
//! - `db`: PostgreSQL (migrations, named queries, write commands, the change log);
//! - `chain`: the RPC transport and the live sources; `ingest`: chain reads into
//!   index writes;
//! - `actors` (the top-level `actors/` folder): the actors that own state;
//! - `feed`: SSE subscribers, the replay window, rendered answers;
//! - `http`: routes, extractors, handlers, the console;
//! - `metrics`, `logging`, `config`;
//! - `app`: wires it all together; `operator`: the operator CLI's commands;
//!   `demo`: the demo market; `remote`: the signed client (`lendex remote`).

#[path = "../actors/mod.rs"]
pub mod actors;
pub mod app;
pub mod config;
pub mod demo;
pub mod error;
pub mod feed;
pub mod http;
pub mod ingest;
pub mod logging;
pub mod metrics;
pub mod operator;
pub mod remote;

/// The chain at the edge: RPC transport, reads, live sources (`crates/chain`).
pub use lendex_chain as chain;
/// The pure rules, a crate of their own (`crates/domain`).
pub use lendex_domain as domain;
/// The health engine, pure, a crate of its own (`crates/engine`).
pub use lendex_engine as engine;
/// PostgreSQL at the edge: migrations, queries, writes, the change log (`crates/store`).
pub use lendex_store as db;
/// Every request and response body, a crate of its own (`crates/wire`).
pub use lendex_wire as wire;
