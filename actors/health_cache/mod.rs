//! The health cache: account health factors in memory, the unhealthy ranking,
//! the liquidators' feed, and each owner's positions for dApp reads.
//!
//! - `engine`: the pure core (pools, owners, ranking, LRU; what changed). It is
//!   the one owner of the account health factor.
//! - `view`: what readers see of it (an owner's view, the feed events).
//! - `loader`: PostgreSQL rows to engine inputs.
//! - `listen`: the LISTEN connection that announces every change, whoever made it.
//! - `feed`: rendering (unhealthy rows, the SSE frame, shared rendered answers);
//!   `quotes`: liquidation quotes and the at-risk list as served.
//! - `actor` + `messages`: the thin actix shell and what others can ask of it.
//!
//! `positions.health_factor_wad` is written only from here (the write-back of
//! `SetHealthFactors`); a sync answers only once its owner's value is committed.

mod actor;
pub mod engine;
pub mod feed;
mod frame;
mod listen;
mod loader;
mod messages;
mod parallel;
pub mod quotes;
pub mod subscriber;
pub mod view;

pub use actor::{Borrows, HealthCache};
pub use messages::{
    AwaitListening, BorrowsChanged, CacheStats, Changed, CloseStreams, FlushWrites, KeepBorrows,
    LoadAll, OwnerOf, OwnerPositions, OwnerRow, Render, Stats, Subscribe,
};

use actix::Addr;

use crate::domain::pubkey::Pubkey;

/// After a committed write of positions or pools: waits until this replica's
/// cache has applied it and the owners' health factors are committed, so the
/// caller reads its own write everywhere. (Other replicas learn of it through
/// NOTIFY.) The write is committed either way, so a cache hiccup is logged.
pub async fn after_write(cache: &Addr<HealthCache>, owners: Vec<Pubkey>, pools: Vec<Pubkey>) {
    let changed = Changed {
        owners,
        pools,
        write_through: true,
    };
    match cache.send(changed).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "cache refresh after write failed; NOTIFY will retry")
        }
        Err(e) => tracing::warn!(error = %e, "cache unreachable after write"),
    }
}
