//! The chain's Prometheus series, named once here beside the code that
//! records them (the service's `metrics` module installs the recorder and
//! describes these through `describe`): RPC requests, the rate gate, and each
//! live source's (stream.rs), the slot tree's at processed (forks.rs).

pub mod forks;
pub mod stream;

use std::time::Duration;

use metrics::{Unit, counter, describe_counter, describe_histogram, histogram};

pub const RPC_REQUESTS: &str = "lendex_rpc_requests_total";
pub const RPC_DURATION: &str = "lendex_rpc_request_duration_seconds";
pub const RPC_RATE_LIMITED: &str = "lendex_rpc_rate_limited_total";
pub const RPC_GATE_WAIT: &str = "lendex_rpc_gate_wait_seconds";

pub fn rpc_request(method: &str, outcome: &'static str, took: Duration) {
    counter!(RPC_REQUESTS, "method" => method.to_string(), "outcome" => outcome).increment(1);
    histogram!(RPC_DURATION, "method" => method.to_string()).record(took.as_secs_f64());
}

pub fn rpc_rate_limited() {
    counter!(RPC_RATE_LIMITED).increment(1);
}

pub fn rpc_gate_wait(waited: Duration) {
    histogram!(RPC_GATE_WAIT).record(waited.as_secs_f64());
}

pub fn describe() {
    forks::describe();
    describe_counter!(
        RPC_REQUESTS,
        "JSON-RPC requests to the chain, by method and outcome (ok, error, rate_limited, queue_full)"
    );
    describe_histogram!(
        RPC_DURATION,
        Unit::Seconds,
        "JSON-RPC request time, gate wait included"
    );
    describe_counter!(RPC_RATE_LIMITED, "HTTP 429 answers from the RPC endpoint");
    describe_histogram!(
        RPC_GATE_WAIT,
        Unit::Seconds,
        "Time a request waited at the rate and concurrency gate"
    );
}

/// Rare counters exist from the start, at 0 (a rate() over them shows 0, not nothing).
pub fn zero() {
    forks::zero();
    counter!(RPC_RATE_LIMITED).absolute(0);
}
