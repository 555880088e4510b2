//! Streamed account writes (a gRPC source, docs/design.md §14): each comes with the
//! slot it was written in and its write version, so it is written as it came,
//! under the order rule: never over a row holding a newer (slot, write
//! version), a read of a slot counting as the newest write of that slot. No
//! re-read is needed, unlike a websocket notification whose slot may be the
//! subscription's.
//!
//! An account of the program with 0 lamports, or one no longer owned by the
//! program, is a closed account: removed when it is a position the index
//! holds (the caller asks), else skipped. Anything else that is not a valid
//! pool or position (shorter than its layout, an unknown discriminator) is
//! counted and skipped; longer data is fine.

use std::collections::BTreeMap;

use super::Ingest;
use lendex_domain::accounts::{
    POOL_DISCRIMINATOR, POSITION_DISCRIMINATOR, POSITION_POOL_OFFSET, check_pool, check_position,
};
use lendex_domain::index_writes::AccountWrite;
use lendex_domain::index_writes::{SyncPool, SyncPosition};
use lendex_domain::pubkey::Pubkey;
use lendex_domain::raw::AccountUpdate;

/// What one streamed account becomes.
#[derive(Debug)]
pub enum Streamed {
    /// A pool's or a position's write, of the pool named (boxed: a pool's
    /// state is large, and most of what a stream carries is positions).
    Write {
        pool: Pubkey,
        write: Box<AccountWrite>,
    },
    /// Closed, or handed to another program: removed if the index holds it as
    /// a position, at this slot.
    Closed { account: Pubkey, slot: u64 },
    /// Not the index's: counted under this reason.
    Skipped(&'static str),
}

/// The latest write of each account in a batch: the highest (slot, write
/// version), the later arrival on a tie.
pub fn latest(batch: &[AccountUpdate]) -> Vec<&AccountUpdate> {
    let mut latest: BTreeMap<Pubkey, &AccountUpdate> = BTreeMap::new();
    for n in batch {
        let order = |n: &AccountUpdate| (n.slot, n.write_version.unwrap_or(u64::MAX));
        match latest.get(&n.pubkey) {
            Some(seen) if order(seen) > order(n) => {}
            _ => {
                latest.insert(n.pubkey, n);
            }
        }
    }
    latest.into_values().collect()
}

impl Ingest {
    pub fn streamed(&self, account: &AccountUpdate) -> Streamed {
        if account.owner != self.program || account.lamports == Some(0) {
            return Streamed::Closed {
                account: account.pubkey,
                slot: account.slot,
            };
        }
        let data = account.data.as_slice();
        let parts = Some((&account.owner, data));
        if data.starts_with(&POOL_DISCRIMINATOR) {
            return match check_pool(&self.program, parts) {
                Ok(pool) => Streamed::Write {
                    pool: account.pubkey,
                    write: Box::new(AccountWrite::Pool(SyncPool {
                        cluster: self.cluster,
                        pool_address: account.pubkey.to_string(),
                        pool,
                        slot: account.slot,
                        write_version: account.write_version,
                        symbol: None,
                        catch_up: false,
                    })),
                },
                Err(_) => Streamed::Skipped("undecodable pool"),
            };
        }
        if data.starts_with(&POSITION_DISCRIMINATOR) {
            let pool = data
                .get(POSITION_POOL_OFFSET..POSITION_POOL_OFFSET + 32)
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
                .map(Pubkey::new_from_array);
            let Some(pool) = pool else {
                return Streamed::Skipped("undecodable position");
            };
            return match check_position(&self.program, parts, &pool, None) {
                Ok(position) => Streamed::Write {
                    pool,
                    write: Box::new(AccountWrite::Position(SyncPosition {
                        cluster: self.cluster,
                        pool_address: pool.to_string(),
                        pool: None,
                        position_address: account.pubkey.to_string(),
                        owner: position.owner,
                        position: Some(position),
                        slot: account.slot,
                        write_version: account.write_version,
                    })),
                },
                Err(_) => Streamed::Skipped("undecodable position"),
            };
        }
        Streamed::Skipped("unknown discriminator")
    }
}
