//! Lendex: a live index of a Solana lending program.
//!
//! - `domain`: pure logic (validation, auth message, and later WAD math and decoding);
//! - `db`: PostgreSQL pool, migrations, named queries and write commands;
//! - `actors` (the top-level `actors/` folder): the actors that own state;
//! - `http`: routes, extractors and handlers;
//! - `app`: wires it all together; `ops`: the operator CLI's commands;
//! - `metrics`: the Prometheus series, named once;
//! - `remote`: the operator's signed client (`lendex remote`, `lendex keygen`).

#[path = "../actors/mod.rs"]
pub mod actors;
pub mod app;
pub mod chain;
pub mod config;
pub mod db;
pub mod demo;
pub mod domain;
pub mod engine;
pub mod error;
pub mod feed;
pub mod http;
pub mod ingest;
pub mod logging;
pub mod metrics;
pub mod ops;
pub mod remote;
pub mod wire;
