//! History's feed price rows (docs/design.md §12, §17). The engine that
//! takes the change log keeps each feed's last reading (the pool view values
//! nothing at them), so that while it records, a usable feed's (price, conf,
//! exponent) is recorded for each pool naming it whenever it changes, its
//! first reading included, and a pool that names another feed records the
//! new one's.

use super::Engine;
use super::oracle::FeedReading;
use lendex_domain::pubkey::Pubkey;

impl Engine {
    /// A feed's reading from the change log; one older than the one held
    /// changes nothing.
    pub(crate) fn feed_read(&mut self, feed: Pubkey, reading: FeedReading) {
        if (self.feed_readings.get(&feed)).is_some_and(|held| held.slot > reading.slot) {
            return;
        }
        self.feed_readings.insert(feed, reading);
        if self.history.is_none() {
            return;
        }
        let mut naming: Vec<Pubkey> = (self.pools())
            .filter(|p| p.state.feed == Some(feed))
            .map(|p| p.state.address)
            .collect();
        naming.sort_unstable();
        for pool in naming {
            self.note_feed_price(&pool);
        }
    }

    /// The readings a load read, in place of those held.
    pub fn load_feed_readings(&mut self, readings: &[(Pubkey, FeedReading)]) {
        self.feed_readings = readings.iter().copied().collect();
    }

    /// Records the pool's feed price, when its feed is usable and its price
    /// differs from the last one recorded of the pool (while recording).
    pub(super) fn note_feed_price(&mut self, pool: &Pubkey) {
        let Some(feed) = self.pool(pool).and_then(|p| p.state.feed) else {
            return;
        };
        let Some(reading) = self.feed_readings.get(&feed) else {
            return;
        };
        let Some((price, conf, expo)) = reading.usable() else {
            return;
        };
        let slot = reading.slot;
        if let Some(history) = self.history.as_mut() {
            history.note_feed(*pool, slot, (Some(price), Some(conf), Some(expo)));
        }
    }
}
