//! History's series (docs/design.md §12): records as they are queued, batches as
//! they are stored, rows dropped past the cap or fenced off by a takeover;
//! the queue's depth and the partitions are read from the writer at scrape.

use std::time::Duration;

use metrics::{
    Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram,
};

use crate::engine::history::Record;
use lendex_store::history::write::Batch;

pub const RECORDED: &str = "lendex_history_recorded_total";
pub const STORED: &str = "lendex_history_stored_rows_total";
pub const FLUSH: &str = "lendex_history_flush_duration_seconds";
pub const FLUSH_FAILED: &str = "lendex_history_flush_failures_total";
pub const DROPPED: &str = "lendex_history_dropped_total";
pub const FENCED: &str = "lendex_history_fenced_total";
pub const QUEUE: &str = "lendex_history_queue_rows";
pub const QUEUE_MAX: &str = "lendex_history_queue_max_rows";
pub const PARTITIONS: &str = "lendex_history_partitions";
pub const RECORDING: &str = "lendex_history_recording";

/// Record kinds, the label of the counters.
const KINDS: [&str; 8] = [
    "point",
    "under",
    "recovered",
    "liquidated",
    "bad_debt",
    "price",
    "market",
    "other",
];

pub fn describe() {
    describe_counter!(
        RECORDED,
        "History records queued (on the leader), by kind: point, under, recovered, liquidated, bad_debt, price, market"
    );
    describe_counter!(STORED, "History rows stored, by kind");
    describe_histogram!(
        FLUSH,
        Unit::Seconds,
        "Time to store one batch of history (partitions, ids and COPY, commit included)"
    );
    describe_counter!(
        FLUSH_FAILED,
        "History batches that could not be stored (retried as they were)"
    );
    describe_counter!(
        DROPPED,
        "History rows dropped, the oldest first, past history.max_pending"
    );
    describe_counter!(
        FENCED,
        "History rows of a former leadership not stored because another leader took over"
    );
    describe_gauge!(QUEUE, "History rows waiting to be stored");
    describe_gauge!(
        QUEUE_MAX,
        "The queue's cap (history.max_pending): past it the oldest rows are dropped"
    );
    describe_gauge!(PARTITIONS, "History day partitions (every table's)");
    describe_gauge!(
        RECORDING,
        "1 while this replica records history (the leader)"
    );
}

pub fn zero() {
    for name in [DROPPED, FENCED, FLUSH_FAILED] {
        counter!(name).absolute(0);
    }
    for kind in KINDS.iter().take(7) {
        counter!(RECORDED, "kind" => *kind).absolute(0);
        counter!(STORED, "kind" => *kind).absolute(0);
    }
}

fn kind(record: &Record) -> &'static str {
    match record {
        Record::Point(_) => "point",
        Record::Event(e) => e.kind.as_str(),
        Record::Price(_) => "price",
        Record::Market(_) => "market",
    }
}

/// Counts records by kind.
fn count<'a>(name: &'static str, records: impl Iterator<Item = &'a Record>) {
    let mut by_kind = [0u64; KINDS.len()];
    for r in records {
        let k = kind(r);
        let i = KINDS
            .iter()
            .position(|x| *x == k)
            .unwrap_or(KINDS.len() - 1);
        by_kind[i] += 1;
    }
    for (i, n) in by_kind.iter().enumerate() {
        if *n > 0 {
            counter!(name, "kind" => KINDS[i]).increment(*n);
        }
    }
}

pub fn recorded<'a>(records: impl Iterator<Item = &'a Record>) {
    count(RECORDED, records);
}

pub fn flushed(batch: &Batch, took: Duration) {
    count(STORED, batch.rows.iter().map(|r| &r.record));
    histogram!(FLUSH).record(took.as_secs_f64());
}

pub fn flush_failed() {
    counter!(FLUSH_FAILED).increment(1);
}

pub fn dropped(rows: u64) {
    counter!(DROPPED).increment(rows);
}

pub fn fenced(rows: usize) {
    counter!(FENCED).increment(rows as u64);
}

/// Scrape-time state of the writer.
pub fn state(queued: usize, max: usize, partitions: i64, recording: bool) {
    gauge!(QUEUE).set(queued as f64);
    gauge!(QUEUE_MAX).set(max as f64);
    gauge!(PARTITIONS).set(partitions as f64);
    gauge!(RECORDING).set(f64::from(u8::from(recording)));
}
