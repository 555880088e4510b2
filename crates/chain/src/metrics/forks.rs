//! The slot tree at `processed` (docs/design.md §15): statuses received,
//! slots abandoned and writes dropped with them, how long slots wait for
//! their confirmation, what the source sent that the tree refused, and the
//! size of the processed view.

use std::time::Duration;

use metrics::{
    Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram,
};

pub const STATUSES: &str = "lendex_chain_slot_statuses_total";
pub const ABANDONED: &str = "lendex_chain_slots_abandoned_total";
pub const DROPPED_WRITES: &str = "lendex_chain_abandoned_writes_dropped_total";
pub const EVICTED: &str = "lendex_chain_unconfirmed_slots_evicted_total";
pub const PROBLEMS: &str = "lendex_chain_slot_problems_total";
pub const CONFIRMATION: &str = "lendex_chain_slot_confirmation_seconds";
pub const OPEN_SLOTS: &str = "lendex_chain_unconfirmed_slots";
pub const PROCESSED_ACCOUNTS: &str = "lendex_processed_view_accounts";

pub fn status(status: &'static str) {
    counter!(STATUSES, "status" => status).increment(1);
}

pub fn abandoned(slots: u64, writes: u64) {
    counter!(ABANDONED).increment(slots);
    counter!(DROPPED_WRITES).increment(writes);
}

pub fn evicted(slots: u64) {
    counter!(EVICTED).increment(slots);
}

pub fn problem(name: &'static str) {
    counter!(PROBLEMS, "problem" => name).increment(1);
}

/// A slot's first status to its confirmation.
pub fn confirmed_after(delay: Duration) {
    histogram!(CONFIRMATION).record(delay.as_secs_f64());
}

pub fn open_slots(n: usize) {
    gauge!(OPEN_SLOTS).set(n as f64);
}

pub fn processed_accounts(n: usize) {
    gauge!(PROCESSED_ACCOUNTS).set(n as f64);
}

pub fn describe() {
    describe_counter!(STATUSES, "Slot statuses received at processed, by status");
    describe_counter!(
        ABANDONED,
        "Slots abandoned (dead, or off the confirmed chain)"
    );
    describe_counter!(
        DROPPED_WRITES,
        "Account writes dropped because their slot was abandoned"
    );
    describe_counter!(
        EVICTED,
        "Unconfirmed slots dropped: past rpc.max_unconfirmed_slots, or reset by a contradiction"
    );
    describe_counter!(
        PROBLEMS,
        "Slot updates the slot tree refused or found contradictory, by problem"
    );
    describe_histogram!(
        CONFIRMATION,
        Unit::Seconds,
        "A slot's first status to its confirmation (processed to confirmed delay)"
    );
    describe_gauge!(OPEN_SLOTS, "Slots neither confirmed nor abandoned yet");
    describe_gauge!(
        PROCESSED_ACCOUNTS,
        "Accounts the processed view holds beyond the confirmed one"
    );
}

/// Rare counters exist from the start, at 0, and the gauges (0 at confirmed).
pub fn zero() {
    counter!(ABANDONED).absolute(0);
    counter!(DROPPED_WRITES).absolute(0);
    counter!(EVICTED).absolute(0);
    gauge!(OPEN_SLOTS).set(0.0);
    gauge!(PROCESSED_ACCOUNTS).set(0.0);
}
