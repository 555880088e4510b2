//! The unhealthy stream's event ids (docs/design.md §11): `<epoch>.<sequence>`,
//! the epoch fixed for the life of a feed's numbering, the sequence ordered.
//! A sequence is a tick of the change log (the high bits) and an event's
//! place in that tick (the low `TICK_BITS`); the last place of a tick is the
//! position of a feed that holds every tick up to it, which a snapshot's
//! events and a position-only frame carry.

/// Bits of a sequence that number events within one tick.
pub const TICK_BITS: u32 = 24;

/// Most events one tick can number.
pub const TICK_EVENTS: usize = 1 << TICK_BITS;

/// An event's SSE id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventId {
    pub epoch: u64,
    pub seq: u64,
}

impl std::fmt::Display for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.epoch, self.seq)
    }
}

impl EventId {
    /// `<digits>.<digits>`, each a u64; anything else is None.
    pub fn parse(text: &str) -> Option<EventId> {
        let (epoch, seq) = text.trim().split_once('.')?;
        let number = |s: &str| {
            (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse::<u64>().ok())
                .flatten()
        };
        Some(EventId {
            epoch: number(epoch)?,
            seq: number(seq)?,
        })
    }

    /// The tick of the change log it belongs to.
    pub fn tick(&self) -> u64 {
        tick_of(self.seq)
    }

    /// Its place in its tick; None for a tick's last place (a snapshot's
    /// events, the feed's position).
    pub fn place_in_tick(&self) -> Option<u64> {
        let place = self.seq & (TICK_EVENTS as u64 - 1);
        (place != TICK_EVENTS as u64 - 1).then_some(place)
    }
}

/// The sequence of the first event of `tick`.
#[inline]
pub fn tick_start(tick: u64) -> u64 {
    tick << TICK_BITS
}

/// The largest sequence of `tick`: the position of a feed that holds every
/// tick up to it (what a snapshot taken then carries).
#[inline]
pub fn tick_end(tick: u64) -> u64 {
    tick_start(tick) | (TICK_EVENTS as u64 - 1)
}

/// The tick a sequence belongs to.
#[inline]
pub fn tick_of(seq: u64) -> u64 {
    seq >> TICK_BITS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_and_say_their_tick_and_place() {
        let id = EventId::parse("7.16777217").unwrap();
        assert_eq!((id.epoch, id.tick(), id.place_in_tick()), (7, 1, Some(1)));
        assert_eq!(id.to_string(), "7.16777217");
        let end = EventId {
            epoch: 7,
            seq: tick_end(3),
        };
        assert_eq!((end.tick(), end.place_in_tick()), (3, None));
        for bad in ["", "7", "7.", ".1", "a.1", "7.1.1", "-1.2"] {
            assert_eq!(EventId::parse(bad), None, "{bad}");
        }
    }
}
