//! The series the actors record as events happen (docs/design.md §9), each
//! named and described here, beside the code that records it; the service's
//! `metrics` module installs the recorder, describes these from here, and
//! renders them with the rest. History's series are in `history`.

pub mod history;
pub mod webhooks;

use std::time::Duration;

use metrics::{Unit, counter, describe_counter, describe_histogram, histogram};

pub const WRITER_BATCH_SIZE: &str = "lendex_writer_batch_size";
pub const WRITER_COMMIT: &str = "lendex_writer_commit_duration_seconds";
pub const ENGINE_RESCORE: &str = "lendex_engine_rescore_duration_seconds";
pub const SYNC_RECONCILES: &str = "lendex_sync_reconciles_total";
pub const SYNC_NOTIFICATIONS: &str = "lendex_sync_notifications_total";
pub const SSE_RESUMES: &str = "lendex_sse_reconnects_total";
pub const HEALTH_FACTORS_WRITTEN: &str = "lendex_engine_health_factors_written_total";
pub const FRESHNESS_NOTIFY: &str = "lendex_feed_notify_to_frame_seconds";
pub const FRESHNESS_CHAIN: &str = "lendex_feed_chain_to_frame_seconds";
pub const FEED_UPDATES: &str = "lendex_oracle_feed_updates_total";
pub const CRANK_LAG: &str = "lendex_oracle_crank_lag_seconds";

/// Describes every series of the actors (once, when the recorder is installed).
pub fn describe() {
    history::describe();
    webhooks::describe();
    describe_histogram!(
        WRITER_BATCH_SIZE,
        "Writes per database writer batch, by lane"
    );
    describe_histogram!(
        WRITER_COMMIT,
        Unit::Seconds,
        "Database writer batch time, commit included, by lane"
    );
    describe_histogram!(
        ENGINE_RESCORE,
        Unit::Seconds,
        "Time to apply a batch of changes to the engine (re-scores and quotes)"
    );
    describe_counter!(SYNC_RECONCILES, "Reconciliations, by outcome (ok, error)");
    describe_counter!(
        SYNC_NOTIFICATIONS,
        "Account notifications received over the RPC websocket"
    );
    describe_counter!(
        SSE_RESUMES,
        "SSE connections with a Last-Event-ID, by outcome (resumed, or reset_ and why)"
    );
    describe_counter!(
        HEALTH_FACTORS_WRITTEN,
        "Owners whose health factor this replica wrote to positions (on a cluster, the lease holder alone)"
    );
    describe_histogram!(
        FRESHNESS_NOTIFY,
        Unit::Seconds,
        "From a NOTIFY of changed rows heard to the feed frames it caused published"
    );
    describe_histogram!(
        FRESHNESS_CHAIN,
        Unit::Seconds,
        "From a chain account notification received (the leader) to the feed frames it caused published"
    );
    describe_counter!(
        FEED_UPDATES,
        "Pyth feed readings applied whose usable (price, conf, exponent) changed (docs/design.md §17)"
    );
    describe_histogram!(
        CRANK_LAG,
        Unit::Seconds,
        "From a pool's feed first differing from its copy to a copy equal to its feed (a crank landing)"
    );
}

/// Counters of rare events exist from the start, at 0.
pub fn zero() {
    history::zero();
    webhooks::zero();
    counter!(SYNC_NOTIFICATIONS).absolute(0);
    counter!(FEED_UPDATES).absolute(0);
    counter!(SSE_RESUMES, "outcome" => "resumed").absolute(0);
    for outcome in ["ok", "error"] {
        counter!(SYNC_RECONCILES, "outcome" => outcome).absolute(0);
    }
}

pub fn writer_batch(lane: &'static str, size: usize, took: Duration) {
    histogram!(WRITER_BATCH_SIZE, "lane" => lane).record(size as f64);
    histogram!(WRITER_COMMIT, "lane" => lane).record(took.as_secs_f64());
}

pub fn engine_applied(took: Duration) {
    histogram!(ENGINE_RESCORE).record(took.as_secs_f64());
}

pub fn sync_reconciled(ok: bool) {
    counter!(SYNC_RECONCILES, "outcome" => if ok { "ok" } else { "error" }).increment(1);
}

pub fn sync_notified(accounts: u64) {
    counter!(SYNC_NOTIFICATIONS).increment(accounts);
}

pub fn sse_resumed(outcome: &'static str) {
    counter!(SSE_RESUMES, "outcome" => outcome).increment(1);
}

/// Owners whose health factor this replica wrote back (the lease holder's
/// alone, on a cluster).
pub fn health_factors_written(owners: usize) {
    counter!(HEALTH_FACTORS_WRITTEN).increment(owners as u64);
}

pub fn feed_freshness_notify(took: Duration) {
    histogram!(FRESHNESS_NOTIFY).record(took.as_secs_f64());
}

pub fn feed_freshness_chain(took: Duration) {
    histogram!(FRESHNESS_CHAIN).record(took.as_secs_f64());
}

/// A feed's usable price moved.
pub fn feed_updated() {
    counter!(FEED_UPDATES).increment(1);
}

/// A pool's copy caught up with its feed, `lag` after the feed first differed.
pub fn crank_landed(lag: Duration) {
    histogram!(CRANK_LAG).record(lag.as_secs_f64());
}
