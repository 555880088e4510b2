//! Recent borrows per wallet (the detail's `borrow_txs`), kept in memory:
//! loaded on a wallet's first read, forgotten when a borrow of the wallet is
//! written (here or announced by another replica). A load that started
//! before such a change is not kept: each change bumps the generation the
//! load was started under.

use std::num::NonZeroUsize;

use lru::LruCache;

use super::messages::Borrows;
use crate::domain::pubkey::Pubkey;

/// Wallets whose recent borrows are kept in memory.
const WALLETS: NonZeroUsize = NonZeroUsize::new(50_000).expect("non-zero");

pub(super) struct BorrowLists {
    lists: LruCache<Pubkey, Borrows>,
    generation: u64,
}

impl Default for BorrowLists {
    fn default() -> Self {
        BorrowLists {
            lists: LruCache::new(WALLETS),
            generation: 0,
        }
    }
}

impl BorrowLists {
    /// The wallet's list if kept, and the generation a load of it starts under.
    pub(super) fn get(&mut self, owner: &Pubkey) -> (Option<Borrows>, u64) {
        (self.lists.get(owner).cloned(), self.generation)
    }

    /// Keeps a list loaded under `generation`, unless something changed since.
    pub(super) fn keep(&mut self, owner: Pubkey, borrows: Borrows, generation: u64) {
        if generation == self.generation {
            self.lists.put(owner, borrows);
        }
    }

    /// Borrows of these wallets were written.
    pub(super) fn changed<'a>(&mut self, owners: impl IntoIterator<Item = &'a Pubkey>) {
        self.generation += 1;
        for owner in owners {
            self.lists.pop(owner);
        }
    }

    /// Announcements may have been missed: every list is forgotten.
    pub(super) fn forget_all(&mut self) {
        self.generation += 1;
        self.lists.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn a_load_started_before_a_change_is_not_kept() {
        let mut lists = BorrowLists::default();
        let owner = Pubkey::new_unique();
        let (none, started) = lists.get(&owner);
        assert!(none.is_none());
        lists.changed([&owner]);
        lists.keep(owner, Arc::new(Vec::new()), started);
        assert!(lists.get(&owner).0.is_none(), "stale load dropped");
        let (_, now) = lists.get(&owner);
        lists.keep(owner, Arc::new(Vec::new()), now);
        assert!(lists.get(&owner).0.is_some());
        lists.forget_all();
        assert!(lists.get(&owner).0.is_none());
    }
}
