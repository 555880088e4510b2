//! Integration tests of the HTTP API against a real PostgreSQL. One test binary
//! (modules below) so the suite links once.

mod admin_api;
mod auth_handshake;
mod chain_api;
mod chain_edge;
mod chain_faults;
mod chain_refresh;
mod chain_stream;
mod chain_support;
mod common;
mod conditional_get;
mod console_browser;
mod draining;
mod examples;
mod feed_resume;
mod geyser;
mod grpc_faults;
mod grpc_source;
mod hardening;
mod health_feed;
mod history;
mod history_faults;
mod history_reads;
mod http_errors;
mod leader;
mod liquidations_api;
mod metrics_api;
mod numeric_binary;
mod process;
mod remote_cli;
mod risk_api;
mod stopping;
mod transactions_api;
mod write_back;
mod writer_lanes;
mod ws_proxy;
