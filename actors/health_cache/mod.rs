//! The health cache: the actor that owns the health engine (`crate::engine`,
//! pure) and feeds it, publishes what changed to the liquidators' feed
//! (`crate::feed`), and writes the engine's health factors back.
//!
//! - `messages`: what the rest of the service can ask of it;
//! - `handlers`: how each message is answered;
//! - `actor`: the pipeline: changed rows read (`db::engine_rows`) one batch at
//!   a time, applied to the engine, published, written back. Changes arrive
//!   from the LISTEN connection (`db::listen`) and from this replica's writes.
//!
//! `positions.health_factor_wad` is written only from here (the write-back of
//! `SetHealthFactors`); a sync answers only once its owner's value is committed.

mod actor;
mod handlers;
mod messages;

pub use actor::HealthCache;
pub use messages::{
    AwaitListening, Borrows, BorrowsChanged, CacheStats, Changed, CloseStreams, FlushWrites,
    KeepBorrows, LoadAll, OwnerOf, OwnerPositions, OwnerRow, Render, Stats, Subscribe,
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
