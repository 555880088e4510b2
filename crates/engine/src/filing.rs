//! Filing owners by standing, and what the engine's readers learn of it: the
//! ranking of owners under water, the count of watched ones, the health
//! factors still to be written, the feed events of each move, and the version
//! every rendered answer is checked against.

use std::collections::BTreeSet;

use super::events::FeedEvent;
use super::{FastMap, WATCH_BELOW};
use lendex_domain::pubkey::Pubkey;
use lendex_domain::wad::WAD;
use lendex_domain::webhooks::crossing::MAX_LINE;

/// Where an owner stands: under water, watched, or healthy (evictable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    Unhealthy,
    Watched,
    Healthy,
}

pub(crate) fn standing(hf: u128) -> Standing {
    if hf < WAD {
        Standing::Unhealthy
    } else if hf < WATCH_BELOW {
        Standing::Watched
    } else {
        Standing::Healthy
    }
}

/// An owner's account health factor as one change moved it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    pub owner: Pubkey,
    /// None: the owner was not held (new, or loaded back after eviction).
    pub before: Option<u128>,
    pub after: u128,
}

#[derive(Default)]
pub(crate) struct Filing {
    /// Unhealthy owners, most underwater first.
    ranking: BTreeSet<(u128, Pubkey)>,
    /// How many owners are watched (1 WAD <= hf < WATCH_BELOW). They are not kept
    /// sorted: a price move shifts thousands of them, and the at-risk list is read
    /// far less often than prices move, so it is sorted when rendered.
    watched: usize,
    /// Health factors not yet known to be stored.
    dirty: FastMap<Pubkey, u128>,
    /// Feed events since the last `take_events`, while they are kept.
    events: Vec<FeedEvent>,
    record_events: bool,
    /// Owners' values that moved since the last `take_moves`, while kept
    /// (webhooks judge their lines on them).
    moves: Vec<Move>,
    record_moves: bool,
    /// During a full reload, while moves are kept: each owner's value
    /// before it, of those below every line's ceiling (`MAX_LINE`).
    moved_from: Option<FastMap<Pubkey, u128>>,
    /// Bumped by any change that can alter an unhealthy answer.
    version: u64,
}

impl Filing {
    /// A new filing after a reload: events kept as they were, and a version
    /// past every one given before (answers rendered before must not match);
    /// `moved_from`, the values the reload's moves are measured from.
    pub(crate) fn after(&mut self, moved_from: Option<FastMap<Pubkey, u128>>) -> Filing {
        Filing {
            events: std::mem::take(&mut self.events),
            record_events: self.record_events,
            record_moves: self.record_moves,
            moved_from,
            version: self.version + 1,
            ..Filing::default()
        }
    }

    pub(crate) fn version(&self) -> u64 {
        self.version
    }

    /// Something an unhealthy or at-risk answer shows changed.
    pub(crate) fn bump(&mut self) {
        self.version += 1;
    }

    // ---- standing ---------------------------------------------------------------

    /// An owner of value `hf` leaves its standing (re-filed or released).
    pub(crate) fn leave(&mut self, key: Pubkey, hf: u128) {
        match standing(hf) {
            Standing::Unhealthy => {
                self.version += 1;
                self.ranking.remove(&(hf, key));
            }
            Standing::Watched => {
                self.watched -= 1;
                self.version += 1;
            }
            Standing::Healthy => {}
        }
    }

    /// An owner of value `hf` takes its standing.
    pub(crate) fn enter(&mut self, key: Pubkey, hf: u128) -> Standing {
        let now = standing(hf);
        match now {
            Standing::Unhealthy => {
                self.version += 1;
                self.ranking.insert((hf, key));
            }
            Standing::Watched => {
                self.watched += 1;
                self.version += 1;
            }
            Standing::Healthy => {}
        }
        now
    }

    /// An owner above water before and after moved from `old` to `hf`: in
    /// place, no ranking; only the watch band's count and version follow.
    pub(crate) fn shift_above_water(&mut self, old: u128, hf: u128) {
        let (was, now) = (standing(old), standing(hf));
        if (was == Standing::Watched || now == Standing::Watched) && old != hf {
            self.version += 1; // the at-risk list moved
        }
        match (was, now) {
            (Standing::Healthy, Standing::Watched) => self.watched += 1,
            (Standing::Watched, Standing::Healthy) => self.watched -= 1,
            _ => {}
        }
    }

    /// Unhealthy owners, most underwater first (ties by owner).
    pub(crate) fn ranking(&self) -> impl Iterator<Item = (u128, Pubkey)> + '_ {
        self.ranking.iter().copied()
    }

    pub(crate) fn unhealthy_count(&self) -> usize {
        self.ranking.len()
    }

    pub(crate) fn watched_count(&self) -> usize {
        self.watched
    }

    // ---- the write-back ---------------------------------------------------------

    /// An owner's value is `hf` and `stored` is believed stored: it is to be
    /// written exactly when they differ.
    pub(crate) fn valued(&mut self, key: Pubkey, hf: u128, stored: Option<u128>) {
        if stored == Some(hf) {
            self.dirty.remove(&key);
        } else {
            self.dirty.insert(key, hf);
        }
    }

    /// An owner released: nothing of it is to be written.
    pub(crate) fn forget(&mut self, key: &Pubkey) {
        self.dirty.remove(key);
    }

    pub(crate) fn reserve_dirty(&mut self, more: usize) {
        self.dirty.reserve(more);
    }

    pub(crate) fn take_dirty(&mut self) -> FastMap<Pubkey, u128> {
        std::mem::take(&mut self.dirty)
    }

    pub(crate) fn dirty_count(&self) -> usize {
        self.dirty.len()
    }

    // ---- the feed ---------------------------------------------------------------

    pub(crate) fn emit(&mut self, event: FeedEvent) {
        if self.record_events {
            self.events.push(event);
        }
    }

    pub(crate) fn record_events(&mut self, on: bool) {
        self.record_events = on;
        if !on {
            self.events.clear();
        }
    }

    pub(crate) fn records_events(&self) -> bool {
        self.record_events
    }

    pub(crate) fn take_events(&mut self) -> Vec<FeedEvent> {
        std::mem::take(&mut self.events)
    }

    /// An owner's value moved from `before` (none: it was not held) to
    /// `after`.
    pub(crate) fn moved(&mut self, owner: Pubkey, before: Option<u128>, after: u128) {
        if self.record_moves && before != Some(after) {
            self.moves.push(Move {
                owner,
                before,
                after,
            });
        }
    }

    pub(crate) fn record_moves(&mut self, on: bool) {
        self.record_moves = on;
        self.moves.clear();
    }

    pub(crate) fn records_moves(&self) -> bool {
        self.record_moves
    }

    /// The moves since the last take.
    pub(crate) fn take_moves(&mut self) -> Vec<Move> {
        std::mem::take(&mut self.moves)
    }

    /// At a reload's end: its moves (every owner read, from no value) as
    /// moves from the values before it, one per owner. An owner not among
    /// those values was at or above `MAX_LINE` (or not held): above every
    /// line, as no value is judged. An owner the reload did not read again
    /// has no value to move to and is left out.
    pub(crate) fn reloaded(&mut self) {
        let read = std::mem::take(&mut self.moves);
        let Some(before) = self.moved_from.take() else {
            return;
        };
        let mut last: FastMap<Pubkey, u128> = FastMap::default();
        for m in read {
            last.insert(m.owner, m.after);
        }
        self.moves = (last.into_iter())
            .filter_map(|(owner, after)| {
                let before = before.get(&owner).copied();
                let moved = before.map_or(after < MAX_LINE, |b| b != after);
                moved.then_some(Move {
                    owner,
                    before,
                    after,
                })
            })
            .collect();
    }

    /// After a reload, an owner under water before and after is updated,
    /// not started twice.
    pub(crate) fn restarted(&mut self, was: &FastMap<Pubkey, u64>) {
        for event in &mut self.events {
            if let FeedEvent::Start(owner, hf) = *event
                && was.contains_key(&owner)
            {
                *event = FeedEvent::Update(owner, hf);
            }
        }
    }
}
