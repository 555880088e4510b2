//! The live chain sources, per source (`websocket`, `grpc`): account updates
//! delivered, updates skipped as unusable, reconnects, resumed subscriptions
//! (replays) and how far the source's slot trails the RPC node's.

use metrics::{counter, gauge};

pub const UPDATES: &str = "lendex_stream_updates_total";
pub const SKIPPED: &str = "lendex_stream_skipped_total";
pub const RECONNECTS: &str = "lendex_stream_reconnects_total";
pub const REPLAYS: &str = "lendex_stream_replays_total";
pub const REPLAYED_SLOTS: &str = "lendex_stream_replayed_slots_total";
pub const LAG_SLOTS: &str = "lendex_stream_lag_slots";

pub fn updates(source: &'static str, n: u64) {
    counter!(UPDATES, "source" => source).increment(n);
}

/// An update that is not a usable account of the index (`why`: a short,
/// fixed phrase), counted and never written.
pub fn skipped(source: &'static str, why: &'static str) {
    counter!(SKIPPED, "source" => source, "reason" => why).increment(1);
}

pub fn reconnected(source: &'static str) {
    counter!(RECONNECTS, "source" => source).increment(1);
}

/// A subscription resumed from the last slot delivered (nothing to reconcile).
pub fn replayed(source: &'static str) {
    counter!(REPLAYS, "source" => source).increment(1);
}

/// Slots the server resent after a resumed subscription.
pub fn replayed_slots(source: &'static str, slots: u64) {
    counter!(REPLAYED_SLOTS, "source" => source).increment(slots);
}

/// The RPC node's slot minus the source's latest slot (0 when ahead).
pub fn lag(source: &'static str, slots: u64) {
    gauge!(LAG_SLOTS, "source" => source).set(slots as f64);
}
