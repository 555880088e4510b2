//! Webhooks' series (docs/design.md §18): attempts by outcome as the
//! deliverer stores them, and the time from a change's commit to its
//! delivery's 2xx. The oldest pending delivery's age is read at scrape.

use std::time::Duration;

use metrics::{
    Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram,
};

use lendex_store::webhooks::deliver::Outcome;

pub const DELIVERIES: &str = "lendex_webhook_deliveries_total";
pub const DELIVERED_AFTER: &str = "lendex_webhook_delivery_latency_seconds";
pub const OLDEST_PENDING: &str = "lendex_webhook_oldest_pending_seconds";

const OUTCOMES: [&str; 3] = ["delivered", "retried", "failed"];

pub fn describe() {
    describe_counter!(
        DELIVERIES,
        "Webhook delivery attempts stored, by outcome: delivered, retried, failed"
    );
    describe_histogram!(
        DELIVERED_AFTER,
        Unit::Seconds,
        "Time from a change's commit to its webhook delivery's 2xx"
    );
    describe_gauge!(
        OLDEST_PENDING,
        "Age of the oldest pending webhook delivery of an active webhook (0 when none)"
    );
}

pub fn zero() {
    for outcome in OUTCOMES {
        counter!(DELIVERIES, "outcome" => outcome).absolute(0);
    }
}

pub fn attempted(outcome: &Outcome) {
    let label = match outcome {
        Outcome::Delivered(_) => OUTCOMES[0],
        Outcome::Retry { .. } => OUTCOMES[1],
        Outcome::Disable { .. } => OUTCOMES[2],
    };
    counter!(DELIVERIES, "outcome" => label).increment(1);
}

pub fn delivered_after(took: Duration) {
    histogram!(DELIVERED_AFTER).record(took.as_secs_f64());
}

/// Set at scrape, from the queue.
pub fn oldest_pending(seconds: f64) {
    gauge!(OLDEST_PENDING).set(seconds);
}
