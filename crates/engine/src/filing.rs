//! Filing an owner by standing: under water (the ranking), watched (never
//! evicted), or healthy (the LRU, evicted past `max_owners`); the slab of
//! owners; and the feed events each move emits.

use super::*;

/// Where an owner stands: under water, watched, or healthy (evictable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Standing {
    Unhealthy,
    Watched,
    Healthy,
}

pub(super) fn standing(hf: u128) -> Standing {
    if hf < WAD {
        Standing::Unhealthy
    } else if hf < WATCH_BELOW {
        Standing::Watched
    } else {
        Standing::Healthy
    }
}

impl Engine {
    pub(super) fn emit(&mut self, event: FeedEvent) {
        if self.record_events {
            self.events.push(event);
        }
    }

    pub(super) fn alloc(&mut self, key: Pubkey) -> Slot {
        let owner = Owner {
            key,
            positions: Vec::new(),
            hf: u128::MAX,
            stored_hf: None,
            quote: None,
            recorded: self.unpark(&key),
            deferred: None,
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.owners[id as usize] = owner;
                id
            }
            None => {
                self.owners.push(owner);
                (self.owners.len() - 1) as Slot
            }
        };
        self.index.insert(key, id);
        id
    }

    /// Forgets a slot: out of the index, the ranking, the LRU and its pools.
    pub(super) fn release(&mut self, id: Slot) {
        self.settle_note(id);
        let owner = &mut self.owners[id as usize];
        let positions = std::mem::take(&mut owner.positions);
        let (key, hf) = (owner.key, owner.hf);
        if let Some(baseline) = owner.recorded.take() {
            self.park_baseline(key, baseline);
        }
        for p in &positions {
            if let Some(pool) = self.pools.get_mut(&p.pool) {
                pool.members.remove(&id);
            }
        }
        match standing(hf) {
            Standing::Unhealthy => {
                self.ranking.remove(&(hf, key));
            }
            Standing::Watched => {
                self.watched -= 1;
                self.version += 1;
            }
            Standing::Healthy => {}
        }
        self.owners[id as usize].quote = None;
        self.lru.pop(&id);
        self.index.remove(&key);
        self.dirty.remove(&key);
        self.free.push(id);
    }

    /// Records an owner's new health factor and quote (`quote_of` its state),
    /// files it by standing (ranking, watch list, or LRU), and emits the feed
    /// event of the transition. `old` is the previous value of a resident owner.
    pub(super) fn refile(
        &mut self,
        id: Slot,
        hf: u128,
        old: Option<u128>,
        rows_changed: bool,
        quote: Option<Box<Quote>>,
    ) {
        let owner = &mut self.owners[id as usize];
        let key = owner.key;
        owner.hf = hf;
        if owner.stored_hf != Some(hf) {
            self.dirty.insert(key, hf);
        } else {
            self.dirty.remove(&key);
        }
        let was = old.map(standing);
        match (was, old) {
            (Some(Standing::Unhealthy), Some(h)) => {
                self.version += 1;
                self.ranking.remove(&(h, key));
            }
            (Some(Standing::Watched), Some(_)) => {
                self.watched -= 1;
                self.version += 1;
            }
            _ => {}
        }
        let quote_changed = self.set_quote(id, quote);
        match standing(hf) {
            Standing::Unhealthy => {
                self.version += 1;
                self.ranking.insert((hf, key));
                self.lru.pop(&id);
                if was != Some(Standing::Unhealthy) {
                    self.emit(FeedEvent::Start(key, hf));
                } else if old != Some(hf) || rows_changed || quote_changed {
                    self.emit(FeedEvent::Update(key, hf));
                }
                return;
            }
            Standing::Watched => {
                self.watched += 1;
                self.version += 1;
                self.keep(id);
            }
            Standing::Healthy => self.keep(id),
        }
        if was == Some(Standing::Unhealthy) {
            self.emit(FeedEvent::Stop(key, hf));
        }
    }

    /// Sets an owner's quote; true when it changed.
    pub(super) fn set_quote(&mut self, id: Slot, quote: Option<Box<Quote>>) -> bool {
        let owner = &mut self.owners[id as usize];
        if owner.quote == quote {
            return false;
        }
        owner.quote = quote;
        true
    }

    /// A pool's liquidation terms changed (not its pricing): its members under
    /// water get new quotes, and the feed says so.
    pub(super) fn requote_pool(&mut self, id: PoolId) {
        self.version += 1;
        let members: Vec<Slot> = self.pools[&id].members.iter().copied().collect();
        for member in members {
            let (key, hf) = (
                self.owners[member as usize].key,
                self.owners[member as usize].hf,
            );
            let quote = quote_of(&self.pools, &self.owners[member as usize].positions, hf);
            if hf < WAD && self.set_quote(member, quote) {
                self.emit(FeedEvent::Update(key, hf));
            }
        }
    }

    /// Puts an owner above water first in the LRU, then evicts past `max_owners`:
    /// the least recent healthy owners go; watched ones are moved to the front
    /// (each at most once per call, so this ends even if all are watched).
    pub(super) fn keep(&mut self, id: Slot) {
        self.lru.put(id, ());
        self.enforce_cap(Some(id));
    }

    /// Evicts least recent healthy owners while more than `max_owners` are above
    /// water; `spare` (just filed) is passed over like the watched ones.
    pub(super) fn enforce_cap(&mut self, spare: Option<Slot>) {
        let mut passes = self.lru.len();
        while self.lru.len() > self.max_owners && passes > 0 {
            passes -= 1;
            let Some((&oldest, _)) = self.lru.peek_lru() else {
                break;
            };
            if Some(oldest) == spare
                || standing(self.owners[oldest as usize].hf) != Standing::Healthy
            {
                self.lru.promote(&oldest);
                continue;
            }
            self.lru.pop(&oldest);
            self.evict(oldest);
        }
    }

    /// An owner pushed out of the LRU: its pools remember that a member is missing.
    pub(super) fn evict(&mut self, id: Slot) {
        self.evictions += 1;
        for p in &self.owners[id as usize].positions {
            if let Some(pool) = self.pools.get_mut(&p.pool) {
                pool.has_evicted_members = true;
            }
        }
        self.release(id);
    }
}
