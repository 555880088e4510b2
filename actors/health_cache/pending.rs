//! What waits on the health cache's pipeline: the changes and waiters for
//! the next reads (`pipeline.rs`). Plain data, held by the actor (`actor.rs`).

use std::collections::HashSet;
use std::time::Instant;

use tokio::sync::oneshot;

use crate::domain::pubkey::Pubkey;
use crate::error::ActorResult;

/// Told once what it waits for is done (or failed).
pub(super) type Waiter = oneshot::Sender<ActorResult<()>>;

/// What a waiter waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Need {
    /// Every change committed before it asked, applied.
    Log,
    /// A full reload.
    Reload,
    /// Evicted owners read back.
    Owners,
}

/// What waits for the next reads.
#[derive(Default)]
pub(super) struct Pending {
    pub reload_all: bool,
    /// Ticks were committed that the engine may not hold.
    pub read_log: bool,
    /// Owners the engine no longer holds, to be read back.
    pub owners: HashSet<Pubkey>,
    /// Pools whose evicted owners must be re-loaded from the database.
    pub fallback_pools: HashSet<Pubkey>,
    /// Each with what it needs and the reads started when it asked: only a
    /// read started after that can answer it.
    pub waiters: Vec<(Need, u64, Waiter)>,
    /// Some waiter wants the health factors written before it is answered.
    pub write_through: bool,
    /// When the first NOTIFY of the next read was heard (freshness metrics).
    pub notify_heard: Option<Instant>,
    /// When the chain notified the first of this replica's writes it holds.
    pub chain_heard: Option<Instant>,
}

/// The earlier of two instants, either possibly unknown.
pub(super) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        _ => a.or(b),
    }
}
