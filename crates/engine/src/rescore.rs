//! A price move: every resident member of the pool is re-scored. The scores, and
//! the quotes of the members under water, depend only on the pools and each
//! owner's own positions, so they are computed on all cores first; filing them
//! (ranking, LRU, events, write-back) stays sequential and in member order.

use super::parallel::par_map;
use super::*;

impl Engine {
    /// Re-scores every resident member of a repriced pool. An owner that stays
    /// healthy, or stays in the watch band, is updated in place, without touching
    /// the LRU order or the ranking (the common case of a price move).
    pub(super) fn rescore_pool(&mut self, id: PoolId, cause: Cause) {
        // An earlier re-score's values are noted before this one moves them.
        self.settle_notes();
        // In slot order: owners and their positions were allocated in load order,
        // so this walks memory forwards instead of in the set's hash order (the
        // re-score is bound by cache misses, not arithmetic).
        let mut members: Vec<Slot> = self.pools[&id].members.iter().copied().collect();
        members.sort_unstable();
        let (pools, owners, this) = (&self.pools, &self.owners, &*self);
        // While history records, each owner's sums and slot are taken in the
        // same pass as its health factor (the §3 value of those sums), on
        // every core; they are kept for the owners whose new value will be
        // recorded, and noted after the feed's publish (`defer_note`).
        let recording = self.is_recording_history();
        let scored = par_map(&members, |&member| {
            let owner = &owners[member as usize];
            let (hf, valued) = if recording {
                let (sums, valued) = history::valued_of(pools, &owner.positions);
                (sums.health_factor(), Some(valued))
            } else {
                (score(pools, &owner.positions), None)
            };
            let valued = valued.filter(|_| this.history_qualifies(owner, hf));
            (hf, quote_of(pools, &owner.positions, hf), valued)
        });
        self.dirty.reserve(members.len());
        for (member, (hf, quote, valued)) in members.into_iter().zip(scored) {
            let key = self.owners[member as usize].key;
            if self.index.get(&key) != Some(&member) {
                continue; // evicted during this loop: re-loaded by the caller
            }
            let owner = &mut self.owners[member as usize];
            let (was, now) = (standing(owner.hf), standing(hf));
            // Above water before and after: in place (no LRU move, no ranking);
            // only the watch band's count and version follow.
            if was != Standing::Unhealthy && now != Standing::Unhealthy {
                if (was == Standing::Watched || now == Standing::Watched) && owner.hf != hf {
                    self.version += 1; // the at-risk list moved
                }
                match (was, now) {
                    (Standing::Healthy, Standing::Watched) => self.watched += 1,
                    (Standing::Watched, Standing::Healthy) => self.watched -= 1,
                    _ => {}
                }
                owner.hf = hf;
                if owner.stored_hf != Some(hf) {
                    self.dirty.insert(owner.key, hf);
                } else {
                    self.dirty.remove(&owner.key);
                }
                if let Some(valued) = valued {
                    self.defer_note(member, cause, valued);
                }
                continue;
            }
            let old = owner.hf;
            self.refile(member, hf, Some(old), false, quote);
            if let Some(valued) = valued {
                self.defer_note(member, cause, valued);
            }
        }
        // Owners that left the watch band upwards are evictable again.
        self.enforce_cap(None);
    }
}
