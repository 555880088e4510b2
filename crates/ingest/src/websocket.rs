//! Websocket notifications (docs/design.md §7): what a batch names, sorted by kind,
//! and how each account becomes a write: as it came, when its slot can prove
//! it newer; else from a re-read over HTTP.

use std::collections::{BTreeMap, BTreeSet};

use super::Ingest;
use lendex_domain::accounts::{
    LendingPool, POOL_DISCRIMINATOR, POSITION_DISCRIMINATOR, POSITION_POOL_OFFSET, check_pool,
    check_position,
};
use lendex_domain::index_writes::{AccountWrite, SyncPosition};
use lendex_domain::pubkey::Pubkey;
use lendex_domain::raw::AccountRead;
use lendex_domain::raw::AccountUpdate;

/// What a batch of notifications names.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Notifications {
    /// Pools notified themselves.
    pub pools: BTreeSet<Pubkey>,
    /// Positions notified, each with the pool its data names.
    pub positions: BTreeSet<(Pubkey, Pubkey)>,
}

impl Notifications {
    /// Every pool the batch concerns: its own, and its positions'.
    pub fn all_pools(&self) -> BTreeSet<Pubkey> {
        let mut pools = self.pools.clone();
        pools.extend(self.positions.iter().map(|(_, pool)| *pool));
        pools
    }

    /// Keeps only what concerns the pools `keep` says yes to (the registered).
    pub fn retain(&mut self, keep: impl Fn(&Pubkey) -> bool) {
        self.pools.retain(&keep);
        self.positions.retain(|(_, pool)| keep(pool));
    }

    pub fn is_empty(&self) -> bool {
        self.pools.is_empty() && self.positions.is_empty()
    }

    /// What of it names one of `accounts`.
    pub fn only(&self, accounts: &BTreeSet<Pubkey>) -> Notifications {
        Notifications {
            pools: self.pools.intersection(accounts).copied().collect(),
            positions: self
                .positions
                .iter()
                .filter(|(position, _)| accounts.contains(position))
                .copied()
                .collect(),
        }
    }

    /// The accounts to read again for it: every pool it concerns, then its
    /// positions (a position's write carries its pool's state).
    pub fn keys(&self) -> Vec<Pubkey> {
        let mut keys: Vec<Pubkey> = self.all_pools().into_iter().collect();
        keys.extend(self.positions.iter().map(|(position, _)| *position));
        keys
    }
}

/// Sorts a batch by kind, by each account's discriminator; anything else is
/// not the index's.
pub fn sort_out(batch: &[AccountUpdate]) -> Notifications {
    let mut out = Notifications::default();
    for account in batch {
        if account.data.starts_with(&POOL_DISCRIMINATOR) {
            out.pools.insert(account.pubkey);
        } else if account.data.starts_with(&POSITION_DISCRIMINATOR) {
            let pool = account
                .data
                .get(POSITION_POOL_OFFSET..POSITION_POOL_OFFSET + 32)
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
                .map(Pubkey::new_from_array);
            if let Some(pool) = pool {
                out.positions.insert((account.pubkey, pool));
            }
        }
    }
    out
}

impl Ingest {
    /// The accounts of `wanted` (sorted out and kept) that can be written as
    /// notified, and those that must be re-read.
    ///
    /// The §7 slot rule: a notification is written as it came only when its
    /// slot can prove it newer than what the index may hold. Some nodes stamp
    /// every notification with the subscription's slot, so a slot at or below
    /// `trusted_above` (the chain's slot once the subscription was confirmed)
    /// proves nothing. Above it the write is still slot-guarded: a row read at
    /// a newer slot refuses it, and the caller re-reads that account too. Data
    /// that is not a valid account of its kind (a position closed or moved) is
    /// re-read as well.
    pub fn notified(
        &self,
        batch: &[AccountUpdate],
        wanted: &Notifications,
        trusted_above: u64,
    ) -> (Vec<AccountWrite>, BTreeSet<Pubkey>) {
        // The latest notification of each account.
        let latest: BTreeMap<Pubkey, &AccountUpdate> =
            batch.iter().map(|n| (n.pubkey, n)).collect();
        let mut writes = Vec::new();
        let mut reread = BTreeSet::new();
        let provable = |key: &Pubkey| latest.get(key).filter(|n| n.slot > trusted_above);
        for pool in &wanted.pools {
            let write = provable(pool).and_then(|n| {
                let read = AccountRead {
                    slot: n.slot,
                    account: Some(lendex_domain::raw::RawAccount {
                        owner: n.owner,
                        lamports: 0,
                        data: n.data.clone(),
                    }),
                };
                self.pool(pool, &read, None, false).ok()
            });
            match write {
                Some(w) => writes.push(AccountWrite::Pool(w)),
                None => {
                    reread.insert(*pool);
                }
            }
        }
        for (position, pool) in &wanted.positions {
            let write = provable(position).and_then(|n| {
                let state = check_position(&self.program, Some((&n.owner, &n.data)), pool, None);
                Some(self.position_write(position, pool, None, state.ok()?, n.slot))
            });
            match write {
                Some(w) => writes.push(AccountWrite::Position(w)),
                None => {
                    reread.insert(*position);
                }
            }
        }
        (writes, reread)
    }

    /// The writes of re-read accounts: pools as read; positions with their
    /// pool's state read in the same call (a position read without its pool in
    /// `reads` is re-read with it next time). An account that is gone or not
    /// valid is left to the reconciliation, which removes closed positions.
    pub fn reread(
        &self,
        wanted: &Notifications,
        reads: &BTreeMap<Pubkey, AccountRead>,
    ) -> Vec<AccountWrite> {
        let mut writes = Vec::new();
        let mut pools: BTreeMap<Pubkey, LendingPool> = BTreeMap::new();
        for pool in wanted.all_pools() {
            let Some(read) = reads.get(&pool) else {
                continue;
            };
            let Ok(state) = check_pool(&self.program, read.parts()) else {
                continue;
            };
            pools.insert(pool, state);
            if let Ok(write) = self.pool(&pool, read, None, false) {
                writes.push(AccountWrite::Pool(write));
            }
        }
        for (position, pool) in &wanted.positions {
            let (Some(read), Some(pool_state)) = (reads.get(position), pools.get(pool)) else {
                continue;
            };
            let Ok(state) = check_position(&self.program, read.parts(), pool, None) else {
                continue;
            };
            let write =
                self.position_write(position, pool, Some(pool_state.clone()), state, read.slot);
            writes.push(AccountWrite::Position(write));
        }
        writes
    }

    fn position_write(
        &self,
        position: &Pubkey,
        pool: &Pubkey,
        pool_state: Option<LendingPool>,
        state: lendex_domain::accounts::UserPosition,
        slot: u64,
    ) -> SyncPosition {
        SyncPosition {
            cluster: self.cluster,
            pool_address: pool.to_string(),
            pool: pool_state,
            position_address: position.to_string(),
            owner: state.owner,
            position: Some(state),
            slot,
            write_version: None,
        }
    }
}
