//! The feed valuation (docs/design.md §17): each pool valued at its Pyth feed
//! where the feed is usable and differs from the pool's copy, else at the
//! copy. The caller hands over each pool's copy and each feed's reading as
//! they change; what comes back is the pool's state in the feed view, applied
//! to that view's engine like any other change. Everything else (positions,
//! indexes, thresholds, quotes) is the copy's, so the feed view is the pool
//! view with some prices moved ahead.

use std::collections::BTreeSet;

use super::FastMap;
use super::changes::Change;
use super::state::PoolState;
use lendex_domain::pubkey::Pubkey;
use lendex_domain::pyth::{FeedPrice, FeedStatus};

/// A feed account as last read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedReading {
    pub status: FeedStatus,
    /// Its fields, whenever the receiver's data decodes.
    pub price: Option<FeedPrice>,
    /// The slot of the read.
    pub slot: u64,
}

impl FeedReading {
    /// The feed's (price, conf, exponent) when it may value a pool.
    pub fn usable(&self) -> Option<(i64, u64, i32)> {
        let p = self.price.filter(|_| self.status == FeedStatus::Ok)?;
        Some((p.price, p.conf, p.exponent))
    }
}

/// A pool's state in the feed view, and whether its feed differs from its
/// copy (the pool a liquidator must crank for the chain to agree; the
/// state's `crank` says the same).
pub fn at_feed(copy: &PoolState, reading: Option<&FeedReading>) -> (PoolState, bool) {
    let mut state = copy.clone();
    state.crank = false;
    let Some(reading) = reading else {
        return (state, false);
    };
    // Never older than either read, whichever prices it: the engine refuses
    // a state read before the one it holds (a feed back at its copy too).
    state.slot = copy.slot.max(reading.slot);
    let Some((price, conf, exponent)) = reading.usable() else {
        return (state, false);
    };
    let held = (
        copy.pricing.oracle_price,
        copy.terms.oracle_conf,
        copy.pricing.oracle_expo,
    );
    if held == (Some(price), Some(conf), Some(exponent)) {
        return (state, false);
    }
    state.pricing.oracle_price = Some(price);
    state.pricing.oracle_expo = Some(exponent);
    state.terms.oracle_conf = Some(conf);
    // Staleness judged by the feed's publish time (the copy's own update
    // time says nothing of this price).
    if let Some(p) = reading.price {
        state.last_update_ts = p.publish_time;
    }
    state.crank = true;
    (state, true)
}

/// A tick translated (`OracleFeeds::translate`).
pub struct Translated {
    pub changes: Vec<Change>,
    /// Usable readings that moved some pool (/metrics counts them).
    pub feed_updates: usize,
}

struct Priced {
    copy: PoolState,
    feed: Option<Pubkey>,
    crank: bool,
}

/// Every pool's copy and the feed it names, every feed's last reading; what
/// the feed view holds of each pool follows from them (`at_feed`).
#[derive(Default)]
pub struct OracleFeeds {
    pools: FastMap<Pubkey, Priced>,
    readings: FastMap<Pubkey, FeedReading>,
    /// The pools naming each feed (several may share one).
    named_by: FastMap<Pubkey, BTreeSet<Pubkey>>,
}

impl OracleFeeds {
    /// A pool's copy as committed (naming its feed): its state in the feed
    /// view. A copy older than the one held changes nothing (None).
    pub fn copy(&mut self, copy: PoolState) -> Option<PoolState> {
        if (self.pools.get(&copy.address)).is_some_and(|p| p.copy.slot > copy.slot) {
            return None;
        }
        Some(self.restore_copy(copy))
    }

    /// A pool's copy set whatever slot the one held has (a processed copy
    /// taken back puts the confirmed one back): its state in the feed view.
    pub fn restore_copy(&mut self, copy: PoolState) -> PoolState {
        let (address, feed) = (copy.address, copy.feed);
        let before = self.pools.get(&address).and_then(|p| p.feed);
        if before != feed {
            if let Some(old) = before {
                self.unname(&old, &address);
            }
            if let Some(new) = feed {
                self.named_by.entry(new).or_default().insert(address);
            }
        }
        let reading = feed.and_then(|f| self.readings.get(&f));
        let (state, crank) = at_feed(&copy, reading);
        self.pools.insert(address, Priced { copy, feed, crank });
        state
    }

    /// A pool gone from the index.
    pub fn removed(&mut self, pool: &Pubkey) {
        if let Some(Priced { feed: Some(f), .. }) = self.pools.remove(pool) {
            self.unname(&f, pool);
        }
    }

    /// A feed account read (a missing account is a reading too, with its
    /// status): the feed view's new state of each pool naming it. A reading
    /// older than the one held changes nothing.
    pub fn reading(&mut self, feed: &Pubkey, reading: FeedReading) -> Vec<PoolState> {
        if self
            .readings
            .get(feed)
            .is_some_and(|r| r.slot > reading.slot)
        {
            return Vec::new();
        }
        self.restore_reading(feed, reading)
    }

    /// A feed's reading set whatever slot the one held has (a processed
    /// reading taken back puts the confirmed one back): the feed view's new
    /// state of each pool naming it.
    pub fn restore_reading(&mut self, feed: &Pubkey, reading: FeedReading) -> Vec<PoolState> {
        self.readings.insert(*feed, reading);
        self.reprice_named(feed)
    }

    /// A feed's reading dropped (a processed one taken back with no
    /// confirmed one to return to): each pool naming it at its copy.
    pub fn forget_reading(&mut self, feed: &Pubkey) -> Vec<PoolState> {
        self.readings.remove(feed);
        self.reprice_named(feed)
    }

    /// The pools naming `feed`, priced at its reading now.
    fn reprice_named(&mut self, feed: &Pubkey) -> Vec<PoolState> {
        let reading = self.readings.get(feed).copied();
        let named: Vec<Pubkey> = (self.named_by.get(feed))
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default();
        let mut moved = Vec::new();
        for pool in named {
            if let Some(priced) = self.pools.get_mut(&pool) {
                let (state, crank) = at_feed(&priced.copy, reading.as_ref());
                priced.crank = crank;
                moved.push(state);
            }
        }
        moved
    }

    /// A tick's changes as a view at the feeds' prices applies them: each
    /// pool's copy priced, each feed reading turned into the pools naming
    /// it, everything else as it comes.
    pub fn translate(&mut self, changes: &[Change]) -> Translated {
        let mut out = Translated {
            changes: Vec::with_capacity(changes.len()),
            feed_updates: 0,
        };
        for change in changes {
            match change {
                Change::Pool(state) => out
                    .changes
                    .extend(self.copy(state.clone()).map(Change::Pool)),
                Change::PoolRemoved(pool) => {
                    self.removed(pool);
                    out.changes.push(change.clone());
                }
                Change::Feed { feed, reading } => {
                    let moved = self.reading(feed, *reading);
                    if !moved.is_empty() && reading.status == FeedStatus::Ok {
                        out.feed_updates += 1;
                    }
                    out.changes.extend(moved.into_iter().map(Change::Pool));
                }
                _ => out.changes.push(change.clone()),
            }
        }
        out
    }

    /// A pool's copy as last given.
    pub fn copy_of(&self, pool: &Pubkey) -> Option<&PoolState> {
        self.pools.get(pool).map(|p| &p.copy)
    }

    /// A feed's last reading.
    pub fn reading_of(&self, feed: &Pubkey) -> Option<&FeedReading> {
        self.readings.get(feed)
    }

    /// A pool's feed as the pools status shows it: the account it names
    /// and that account's last reading (None: not read yet).
    pub fn feed_of(&self, pool: &Pubkey) -> Option<(Pubkey, Option<&FeedReading>)> {
        let feed = self.pools.get(pool)?.feed?;
        Some((feed, self.readings.get(&feed)))
    }

    /// Whether the pool is valued at a feed that differs from its copy.
    pub fn crank(&self, pool: &Pubkey) -> bool {
        self.pools.get(pool).is_some_and(|p| p.crank)
    }

    /// Every feed some pool names, sorted (the accounts to follow).
    pub fn feeds(&self) -> Vec<Pubkey> {
        let mut feeds: Vec<Pubkey> = self.named_by.keys().copied().collect();
        feeds.sort_unstable();
        feeds
    }

    fn unname(&mut self, feed: &Pubkey, pool: &Pubkey) {
        if let Some(pools) = self.named_by.get_mut(feed) {
            pools.remove(pool);
            if pools.is_empty() {
                self.named_by.remove(feed);
                // Nobody follows it now: a later reading starts afresh.
                self.readings.remove(feed);
            }
        }
    }
}
