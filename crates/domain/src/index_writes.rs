//! What an ingest step asks the index to write, as data: a pool registered
//! or refreshed, a position synced or removed, a pool's positions
//! reconciled. The store applies each in a transaction of its own, with the
//! order rules of docs/design.md §7 (an older read never overwrites a newer
//! row); nothing here does I/O.

use crate::accounts::{LendingPool, UserPosition};
use crate::pubkey::Pubkey;
use crate::pyth::{FeedPrice, FeedStatus};

/// POST /api/pools/init after every check: inserts the decoded pool (a repeat
/// changes nothing) and always writes the init_pool audit entry, which says
/// what happened: on a repeat, the symbol kept and the one not applied.
pub struct RegisterPool {
    pub cluster: &'static str,
    pub pool_address: String,
    pub pool: LendingPool,
    pub slot: u64,
    pub symbol: Option<String>,
    pub decimals: u8,
    pub created_by: String,
    pub init_signature: String,
}

/// Refreshes a registered pool's chain state: the pool as stored, or `None`
/// when the row already held a newer read (or the pool is not registered).
#[derive(Debug)]
pub struct SyncPool {
    pub cluster: &'static str,
    pub pool_address: String,
    pub pool: LendingPool,
    pub slot: u64,
    /// The write version of a streamed write (gRPC); None for a read.
    pub write_version: Option<u64>,
    pub symbol: Option<String>,
    /// Written by the background reconciliation: only over an older read
    /// (UPDATE_POOL_STATE_CATCH_UP), never over one of the same slot.
    pub catch_up: bool,
}

/// A pool's Pyth feed account read at `slot` (docs/design.md §17): what it
/// is, and its fields whenever its data decodes. Written over an older
/// read only (the same order rule as a pool's).
#[derive(Debug)]
pub struct SyncFeed {
    pub cluster: &'static str,
    pub feed: Pubkey,
    /// Never `Unset` (that is a pool's, naming no feed).
    pub status: FeedStatus,
    pub price: Option<FeedPrice>,
    pub slot: u64,
    /// The write version of a streamed write (gRPC); None for a read.
    pub write_version: Option<u64>,
    /// Written by the background reconciliation: only over an older read.
    pub catch_up: bool,
}

/// One account's write from the chain: a pool's state, a position's, or a
/// pool's feed.
#[derive(Debug)]
pub enum AccountWrite {
    Pool(SyncPool),
    Position(SyncPosition),
    Feed(SyncFeed),
}

impl AccountWrite {
    /// The account it writes.
    pub fn account(&self) -> Pubkey {
        let address = match self {
            AccountWrite::Pool(w) => &w.pool_address,
            AccountWrite::Position(w) => &w.position_address,
            AccountWrite::Feed(w) => return w.feed,
        };
        address.parse().expect("written from a Pubkey")
    }

    /// The slot of the chain data it writes.
    pub fn slot(&self) -> u64 {
        match self {
            AccountWrite::Pool(w) => w.slot,
            AccountWrite::Position(w) => w.slot,
            AccountWrite::Feed(w) => w.slot,
        }
    }
}

/// One position read at `slot` (POST /api/positions/sync, or a notified
/// account re-read): with the pool's state read with it when there is one,
/// then the position upserted (or removed when `position` is None), in one
/// transaction. The owner's health factor is the health engine's to compute
/// and store.
#[derive(Debug)]
pub struct SyncPosition {
    pub cluster: &'static str,
    pub pool_address: String,
    pub pool: Option<LendingPool>,
    pub position_address: String,
    pub owner: Pubkey,
    pub position: Option<UserPosition>,
    pub slot: u64,
    /// The write version of a streamed write (gRPC); None for a read.
    pub write_version: Option<u64>,
}

impl SyncPosition {
    /// The removal of a position the index holds (`owner`'s, in `pool`),
    /// read closed at `slot`.
    pub fn removal(
        cluster: &'static str,
        (pool, position, owner): (Pubkey, Pubkey, Pubkey),
        slot: u64,
        write_version: Option<u64>,
    ) -> SyncPosition {
        SyncPosition {
            cluster,
            pool_address: pool.to_string(),
            pool: None,
            position_address: position.to_string(),
            owner,
            position: None,
            slot,
            write_version,
        }
    }
}

/// Background refresh of one pool, one part of a full scan at `slot`: upserts
/// its positions; the scan's last part also removes the pool's rows the scan
/// no longer found. A scan is written in parts of at most `RECONCILE_PART`
/// positions, each its own transaction, so a pool of any size commits within
/// the write bound (docs/design.md §7).
pub struct RefreshPoolPositions {
    pub cluster: &'static str,
    pub pool_address: String,
    pub slot: u64,
    pub positions: Vec<(String, UserPosition)>,
    /// On the scan's last part: every address the scan found (rows of the
    /// pool older than the scan and not among them are removed).
    pub prune_all_but: Option<Vec<String>>,
}

/// Most positions one part of a reconcile writes.
pub const RECONCILE_PART: usize = 2_000;
