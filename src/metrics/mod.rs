//! Prometheus metrics (docs/design.md §9): every name is defined once, with its
//! help text: here, or beside the code of the crate that records it (the
//! chain's series in `lendex_chain::metrics`, described from here); recorded
//! through the `metrics` facade; GET /metrics renders
//! them with `metrics-exporter-prometheus`. The two HTTP series, recorded on
//! every request, are counted and rendered by `http` instead; the standard
//! `process_*` series and `lendex_build_info` are read and rendered by
//! `process`.
//!
//! Events are counted where they happen (an HTTP request, an RPC call, a writer
//! batch, a re-score, a notification). State that actors already hold (cache
//! size, subscribers, lane queues, the sync's role) is read when /metrics is
//! scraped, so there is no second copy of it to keep in step.
//!
//! The recorder is process-wide (the facade's design): two services in one
//! process (the integration tests) share one set of series.

pub mod http;
pub mod process;
/// The actors' series, named beside the code that records them.
pub use lendex_actors::metrics::{WRITER_BATCH_SIZE, history};
/// The live sources' series, named in the chain crate beside the code that records them.
pub use lendex_chain::metrics::stream;

use crate::domain::pyth::FeedStatus;
use crate::wire::pools::PoolFeed;
use std::sync::OnceLock;
use std::time::Duration;

use chrono::{DateTime, Utc};

use metrics::{Unit, counter, describe_counter, describe_gauge, gauge};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

pub const WRITER_QUEUE: &str = "lendex_writer_queue_depth";
pub const WRITER_FAILED: &str = "lendex_writer_failed_batches_total";
pub const WRITER_EXPIRED: &str = "lendex_writer_expired_writes_total";
pub const ENGINE_OWNERS: &str = "lendex_engine_owners";
pub const ENGINE_UNHEALTHY: &str = "lendex_engine_unhealthy_owners";
pub const ENGINE_WATCHED: &str = "lendex_engine_watched_owners";
pub const ENGINE_POOLS: &str = "lendex_engine_pools";
pub const ORACLE_FEEDS: &str = "lendex_oracle_feeds";
pub const ORACLE_DEVIATION: &str = "lendex_oracle_feed_deviation_bps";
pub const ENGINE_EVICTIONS: &str = "lendex_engine_evictions_total";
pub const ENGINE_FEED_VERSION: &str = "lendex_engine_feed_version";
pub const SSE_SUBSCRIBERS: &str = "lendex_sse_subscribers";
pub const SSE_DROPPED: &str = "lendex_sse_dropped_subscribers_total";
pub const SYNC_LEADER: &str = "lendex_sync_leader";
pub const SYNC_RECONCILE_SECONDS: &str = "lendex_sync_last_reconcile_duration_seconds";
pub const SYNC_LAG_SLOTS: &str = "lendex_sync_lag_slots";
pub const SYNC_STREAM_CONNECTED: &str = "lendex_sync_stream_connected";
pub const SYNC_RECONNECTS: &str = "lendex_sync_stream_reconnects_total";
pub const LOG_DROPPED: &str = "lendex_log_lines_dropped_total";
pub const SSE_OPEN: &str = "lendex_sse_streams_open";
pub const SSE_REFUSED: &str = "lendex_sse_refused_total";
pub const LONG_POLLS_HELD: &str = "lendex_long_polls_held";
pub const LONG_POLLS_REFUSED: &str = "lendex_long_polls_refused_total";
pub const SYNC_FRESH: &str = "lendex_sync_fresh";
pub const SYNC_RECONCILED_AT: &str = "lendex_sync_last_reconcile_timestamp_seconds";
pub const SYNC_NOTIFIED_AT: &str = "lendex_sync_last_notification_timestamp_seconds";
pub const CHAIN_SLOT: &str = "lendex_chain_slot";
pub const SLOT_TREE_PROBLEM: &str = "lendex_chain_slot_tree_problem";
pub const SSE_MAX: &str = "lendex_sse_streams_max";
pub const LONG_POLLS_MAX: &str = "lendex_long_polls_max";
pub const DRAINING: &str = "lendex_draining";

/// Latency buckets, in seconds: 100 µs to 10 s.
const SECONDS_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];
/// A crank lags its feed by seconds to minutes (Pyth's heartbeat is 60 s).
const CRANK_LAG_BUCKETS: &[f64] = &[
    0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0,
];
const SIZE_BUCKETS: &[f64] = &[
    1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0,
];

/// How often the recorder's histogram samples are folded into their buckets
/// when nobody scrapes (they are kept one by one until then).
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// Renders every series: the recorder's, then the HTTP ones (`http`).
#[derive(Clone)]
pub struct Metrics(PrometheusHandle);

impl Metrics {
    pub fn render(&self) -> String {
        let mut out = self.0.render();
        http::render(&mut out);
        process::render(&mut out);
        out
    }
}

/// Installs the recorder (once per process) and returns what /metrics renders.
pub fn install() -> Metrics {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    let handle = HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
                .and_then(|b| {
                    b.set_buckets_for_metric(Matcher::Full(WRITER_BATCH_SIZE.into()), SIZE_BUCKETS)
                })
                // A full name is matched before any suffix.
                .and_then(|b| {
                    let crank_lag = lendex_actors::metrics::CRANK_LAG.into();
                    b.set_buckets_for_metric(Matcher::Full(crank_lag), CRANK_LAG_BUCKETS)
                })
                .expect("bucket lists are not empty")
                .build_recorder();
            let handle = recorder.handle();
            // Fails only when another recorder is installed; then that one records.
            let _ = metrics::set_global_recorder(recorder);
            describe();
            zero();
            // The recorder keeps every histogram sample until it is drained;
            // without a scrape that is memory growing with traffic. A thread of
            // its own, as the exporter's own `install` does, whatever runtime runs.
            let upkeep = handle.clone();
            let _ = std::thread::Builder::new()
                .name("metrics-upkeep".into())
                .spawn(move || {
                    loop {
                        std::thread::sleep(UPKEEP_EVERY);
                        upkeep.run_upkeep();
                    }
                });
            handle
        })
        .clone();
    Metrics(handle)
}

fn describe() {
    lendex_actors::metrics::describe();
    lendex_chain::metrics::describe();
    describe_counter!(
        LOG_DROPPED,
        "Log lines dropped: the log queue was full, or stderr could not be written (a reader gone)"
    );
    describe_gauge!(WRITER_QUEUE, "Writes waiting for the next batch, by lane");
    describe_counter!(
        WRITER_FAILED,
        "Batches that failed as a whole (database down or stalled), by lane"
    );
    describe_counter!(
        WRITER_EXPIRED,
        "Writes answered 503 after waiting past their share of the write timeout, by lane"
    );
    describe_gauge!(ENGINE_OWNERS, "Owners resident in the health engine");
    describe_gauge!(
        ENGINE_UNHEALTHY,
        "Owners with an account health factor below 1"
    );
    describe_gauge!(
        ENGINE_WATCHED,
        "Owners with an account health factor in [1, 2)"
    );
    describe_gauge!(ENGINE_POOLS, "Pools known to the health engine");
    describe_gauge!(
        ORACLE_FEEDS,
        "Pools by the status of the Pyth feed they name (ok, unset, missing, not_a_price_update, partially_verified, nonpositive)"
    );
    describe_gauge!(
        ORACLE_DEVIATION,
        "A pool's feed price against its copy, in basis points (feed above: positive), by pool"
    );
    describe_counter!(
        ENGINE_EVICTIONS,
        "Healthy owners evicted from the engine past cache.max_owners"
    );
    describe_gauge!(
        ENGINE_FEED_VERSION,
        "Bumped by every change to the liquidation feed"
    );
    describe_gauge!(SSE_SUBSCRIBERS, "Open liquidation feed (SSE) subscribers");
    describe_counter!(
        SSE_DROPPED,
        "SSE subscribers dropped for falling too far behind"
    );
    describe_gauge!(
        SYNC_LEADER,
        "1 when this replica holds the cluster's ingester lease"
    );
    describe_gauge!(
        SYNC_RECONCILE_SECONDS,
        Unit::Seconds,
        "Duration of the last complete reconciliation"
    );
    describe_gauge!(
        SYNC_LAG_SLOTS,
        "Slots between the chain's tip and the oldest read of the last reconciliation"
    );
    describe_gauge!(
        SYNC_STREAM_CONNECTED,
        "1 while the RPC websocket is subscribed"
    );
    describe_counter!(
        SYNC_RECONNECTS,
        "Websocket connections made after the first"
    );
    describe_gauge!(
        SYNC_FRESH,
        "1 while the chain sync is fresh as /api/health judges it (always 1 on a follower)"
    );
    describe_gauge!(
        SYNC_RECONCILED_AT,
        Unit::Seconds,
        "Unix time the last complete reconciliation finished (the leader)"
    );
    describe_gauge!(
        SYNC_NOTIFIED_AT,
        Unit::Seconds,
        "Unix time of the live source's last notification (the leader)"
    );
    describe_gauge!(
        CHAIN_SLOT,
        "The slot each view has reached, by view (processed, confirmed; the leader)"
    );
    describe_gauge!(
        SLOT_TREE_PROBLEM,
        "1 while the slot tree reports a contradiction and the processed view is the confirmed one"
    );
    describe_gauge!(SSE_OPEN, "Open SSE streams (the caps count these)");
    describe_gauge!(SSE_MAX, "The cap on open SSE streams (server.max_streams)");
    describe_gauge!(
        LONG_POLLS_MAX,
        "The cap on held long polls (server.max_held_polls)"
    );
    describe_gauge!(
        DRAINING,
        "1 while this replica drains before a stop (health answers 503)"
    );
    describe_counter!(
        SSE_REFUSED,
        "SSE streams refused with 429, by cap (per_address, total)"
    );
    describe_gauge!(LONG_POLLS_HELD, "Long polls held now");
    describe_counter!(
        LONG_POLLS_REFUSED,
        "Long polls answered at once because server.max_held_polls were held"
    );
}

/// Counters of rare events exist from the start, at 0: a dashboard's rate()
/// of a series that appears only on the first refusal shows nothing until then.
fn zero() {
    lendex_actors::metrics::zero();
    lendex_chain::metrics::zero();
    for name in [LONG_POLLS_REFUSED, LOG_DROPPED] {
        counter!(name).absolute(0);
    }
    for cap in ["per_address", "total"] {
        counter!(SSE_REFUSED, "cap" => cap).absolute(0);
    }
}

/// Held while one scrape sets the state gauges and renders, so two scrapes (of
/// two services in one process) never interleave their values.
pub static SCRAPE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Scrape-time state of the writer lanes.
pub fn writer_lane(lane: &str, queued: usize, failed: u64, expired: u64) {
    gauge!(WRITER_QUEUE, "lane" => lane.to_string()).set(queued as f64);
    counter!(WRITER_FAILED, "lane" => lane.to_string()).absolute(failed);
    counter!(WRITER_EXPIRED, "lane" => lane.to_string()).absolute(expired);
}

/// Scrape-time state of the engine and its subscribers.
pub struct EngineGauges {
    pub owners: usize,
    pub unhealthy: usize,
    pub watched: usize,
    pub pools: usize,
    pub evictions: u64,
    pub feed_version: u64,
    pub subscribers: usize,
    pub dropped_subscribers: u64,
}

pub fn engine(g: &EngineGauges) {
    gauge!(ENGINE_OWNERS).set(g.owners as f64);
    gauge!(ENGINE_UNHEALTHY).set(g.unhealthy as f64);
    gauge!(ENGINE_WATCHED).set(g.watched as f64);
    gauge!(ENGINE_POOLS).set(g.pools as f64);
    counter!(ENGINE_EVICTIONS).absolute(g.evictions);
    gauge!(ENGINE_FEED_VERSION).set(g.feed_version as f64);
    gauge!(SSE_SUBSCRIBERS).set(g.subscribers as f64);
    counter!(SSE_DROPPED).absolute(g.dropped_subscribers);
}

/// Scrape-time state of the pools' feeds (docs/design.md §17): how many
/// pools' feeds are in each status, and each deviation from the copy.
pub fn oracle(feeds: &[(String, PoolFeed)]) {
    for status in FeedStatus::ALL.map(FeedStatus::as_str) {
        let n = feeds.iter().filter(|(_, f)| f.status == status).count();
        gauge!(ORACLE_FEEDS, "status" => status).set(n as f64);
    }
    for (pool, feed) in feeds {
        if let Some(bps) = feed.deviation_bps {
            gauge!(ORACLE_DEVIATION, "pool" => pool.clone()).set(bps as f64);
        }
    }
}

/// Scrape-time state of the chain sync.
pub struct SyncGauges {
    pub leader: bool,
    pub fresh: bool,
    /// When the last complete reconciliation finished, and how long it took.
    pub last_reconcile: Option<(DateTime<Utc>, Duration)>,
    pub lag_slots: Option<u64>,
    pub connected: bool,
    pub reconnects: u64,
    pub last_notification: Option<DateTime<Utc>>,
    pub processed_slot: Option<u64>,
    pub confirmed_slot: Option<u64>,
    pub slot_tree_problem: bool,
}

/// A yes/no state as a gauge reads it: 1 or 0.
fn flag(b: bool) -> f64 {
    f64::from(u8::from(b))
}

pub fn sync(g: &SyncGauges) {
    let unix = |at: DateTime<Utc>| at.timestamp_millis() as f64 / 1000.0;
    gauge!(SYNC_LEADER).set(flag(g.leader));
    gauge!(SYNC_FRESH).set(flag(g.fresh));
    if let Some((at, took)) = g.last_reconcile {
        gauge!(SYNC_RECONCILE_SECONDS).set(took.as_secs_f64());
        gauge!(SYNC_RECONCILED_AT).set(unix(at));
    }
    if let Some(lag) = g.lag_slots {
        gauge!(SYNC_LAG_SLOTS).set(lag as f64);
    }
    gauge!(SYNC_STREAM_CONNECTED).set(flag(g.connected));
    counter!(SYNC_RECONNECTS).absolute(g.reconnects);
    if let Some(at) = g.last_notification {
        gauge!(SYNC_NOTIFIED_AT).set(unix(at));
    }
    for (view, slot) in [
        ("processed", g.processed_slot),
        ("confirmed", g.confirmed_slot),
    ] {
        if let Some(slot) = slot {
            gauge!(CHAIN_SLOT, "view" => view).set(slot as f64);
        }
    }
    gauge!(SLOT_TREE_PROBLEM).set(flag(g.slot_tree_problem));
}

pub fn stream_refused(cap: &'static str) {
    counter!(SSE_REFUSED, "cap" => cap).increment(1);
}

pub fn long_poll_refused() {
    counter!(LONG_POLLS_REFUSED).increment(1);
}

/// Scrape-time state of the HTTP side's held connections, their caps, and
/// whether the replica drains.
pub struct HeldGauges {
    pub streams_open: usize,
    pub streams_max: usize,
    pub long_polls_held: usize,
    pub long_polls_max: usize,
    pub draining: bool,
}

pub fn held(g: &HeldGauges) {
    gauge!(SSE_OPEN).set(g.streams_open as f64);
    gauge!(SSE_MAX).set(g.streams_max as f64);
    gauge!(LONG_POLLS_HELD).set(g.long_polls_held as f64);
    gauge!(LONG_POLLS_MAX).set(g.long_polls_max as f64);
    gauge!(DRAINING).set(flag(g.draining));
}

/// Log lines that could not be written (`crate::logging`).
pub fn log_lines_dropped(n: u64) {
    counter!(LOG_DROPPED).increment(n);
}
