//! Webhooks' pure rules (docs/design.md §18): which crossings a webhook
//! announces, how a delivery is named and signed (Standard Webhooks 1.0),
//! when a failed attempt is tried again, and which targets may be called.
//! The service's I/O (storage, HTTP, DNS) is elsewhere; everything here is
//! decided from its arguments.

pub mod crossing;
pub mod judge;
pub mod retry;
pub mod signature;
pub mod targets;

/// The kind of an event a webhook is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// An owner went from at or above the webhook's line to below it.
    Below,
    /// Back to at or above it.
    Recovered,
}

impl EventType {
    pub const ALL: [EventType; 2] = [EventType::Below, EventType::Recovered];

    pub const fn as_str(self) -> &'static str {
        match self {
            EventType::Below => "health.below",
            EventType::Recovered => "health.recovered",
        }
    }
}

/// A change's id as deliveries carry it: the change log's epoch and the
/// tick of the change (docs/design.md §13), the same on every replica.
pub fn change_id(epoch: u64, tick: u64) -> String {
    format!("{epoch}.{tick}")
}

/// A delivery's id, derived from what it delivers (the webhook, the change,
/// the part of a change with more events than one delivery holds): a leader
/// that takes over computes the same one, so a receiver sees a repeat as a
/// repeat. `msg_` and 32 hex digits of SHA-256, as Standard Webhooks' ids
/// look.
pub fn delivery_id(webhook: &str, change_id: &str, part: u32) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::new()
        .chain_update(webhook.as_bytes())
        .chain_update([0])
        .chain_update(change_id.as_bytes())
        .chain_update([0])
        .chain_update(part.to_be_bytes())
        .finalize();
    let mut id = String::with_capacity(36);
    id.push_str("msg_");
    for b in &digest[..16] {
        id.push_str(&format!("{b:02x}"));
    }
    id
}

/// At most this many events in one delivery; a change with more for one
/// webhook is delivered in parts.
pub const MAX_EVENTS_PER_DELIVERY: usize = 1_000;

/// How many deliveries `events` take.
pub fn parts(events: usize) -> usize {
    events.div_ceil(MAX_EVENTS_PER_DELIVERY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_id_names_its_webhook_change_and_part() {
        let id = delivery_id("wh_1", "1700000000000.42", 0);
        assert_eq!(id, delivery_id("wh_1", "1700000000000.42", 0));
        assert!(id.starts_with("msg_") && id.len() == 36, "{id}");
        for other in [
            delivery_id("wh_2", "1700000000000.42", 0),
            delivery_id("wh_1", "1700000000000.43", 0),
            delivery_id("wh_1", "1700000000000.42", 1),
            // The separators keep (webhook, change) pairs apart.
            delivery_id("wh_11", "700000000000.42", 0),
        ] {
            assert_ne!(id, other);
        }
    }

    #[test]
    fn a_change_is_delivered_in_parts_of_a_thousand() {
        assert_eq!(change_id(1_700_000_000_000, 42), "1700000000000.42");
        assert_eq!(parts(0), 0);
        assert_eq!(parts(1), 1);
        assert_eq!(parts(1_000), 1);
        assert_eq!(parts(1_001), 2);
        assert_eq!(parts(25_000), 25);
        assert_eq!(EventType::Below.as_str(), "health.below");
        assert_eq!(EventType::Recovered.as_str(), "health.recovered");
    }
}
