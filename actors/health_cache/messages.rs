//! What the rest of the service can ask of the health cache, and the answers:
//! message types only (their handlers are in `handlers.rs`).

use crate::wire::pools::PoolFeed;
use std::sync::Arc;

use actix::prelude::*;
use bytes::Bytes;
use serde::Serialize;

use crate::domain::pubkey::Pubkey;
use crate::domain::risk::LiquidationPrice;
use crate::domain::view_key::ViewKey;
use crate::engine::PositionState;
use crate::engine::risk::RiskError;
use crate::error::ActorResult;
use crate::serve::poll_answers::Body;
use crate::serve::render::Answer;
use crate::serve::subscriber::FeedStream;
use crate::wire::positions::BorrowTx;
use lendex_store::listen::Notice;

/// Loads every pool and position of the cluster; answers once applied (or failed:
/// the reload is then retried in the background).
#[derive(Message)]
#[rtype(result = "ActorResult<()>")]
pub struct LoadAll;

/// This replica committed a change of the index: read the change log now
/// rather than wait for its NOTIFY. Answers once every change committed
/// before it is applied (in commit order, as every replica applies them), so
/// a writer that awaits it reads its own write from this replica; with
/// `write_through`, only once the resulting health factors are committed to
/// `positions` too.
#[derive(Message)]
#[rtype(result = "ActorResult<()>")]
pub struct CatchUp {
    pub write_through: bool,
    /// When the chain notified the change, if it did (freshness metrics).
    pub chain_heard: Option<std::time::Instant>,
}

/// What the cache's LISTEN connection heard (`lendex_store::listen`): the connection up
/// or down, a reload to make after a reconnect, changed rows, changed borrows.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct DatabaseNotice(pub Notice);

/// Resolves once the LISTEN connection is up. The first load starts after it: a
/// change committed between the load's read and the first LISTEN would
/// otherwise never reach the cache (only later reconnects reload everything).
#[derive(Message)]
#[rtype(result = "()")]
pub struct AwaitListening;

/// The outcome of a write-back: stored, or to be written again.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct WrittenBack {
    pub batch: crate::engine::FastMap<Pubkey, u128>,
    pub ok: bool,
}

/// Writes every pending health factor now and answers once committed (shutdown
/// flushes the cache's queued writes this way before draining the writer).
#[derive(Message)]
#[rtype(result = "()")]
pub struct FlushWrites;

/// A feed answer (unhealthy, liquidations, at-risk) that was not rendered yet for
/// this change and second: rendered here, then shared with every reader.
#[derive(Message)]
#[rtype(result = "ActorResult<Body>")]
pub struct Render(pub Answer, pub ViewKey);

/// An owner's positions with what readers need of their pools, newest sync first
/// (GET /api/positions/{user} and /detail).
#[derive(Message)]
#[rtype(result = "ActorResult<OwnerPositions>")]
pub struct OwnerOf(pub Pubkey, pub ViewKey);

/// A wallet's recent borrows: (pool address, transaction), newest first per pool.
pub type Borrows = Arc<Vec<(String, BorrowTx)>>;

#[derive(Debug, Clone)]
pub struct OwnerPositions {
    pub health_factor: u128,
    pub rows: Vec<OwnerRow>,
    /// The wallet's recent borrows when held in memory; else the reader loads
    /// them and hands them back with `KeepBorrows` and this generation.
    pub borrows: Option<Borrows>,
    pub borrow_generation: u64,
    /// The generation of rendered owner bodies this was read at (`keep_owner_body`).
    pub body_generation: u64,
}

#[derive(Debug, Clone)]
pub struct OwnerRow {
    pub position: PositionState,
    pub symbol: Option<String>,
    pub deposit_index_wad: u128,
    pub borrow_index_wad: u128,
    pub supply_apy: f64,
    pub borrow_apy: f64,
    /// The price of this pool at which the account crosses 1, with its expo.
    pub liquidation_price: Option<(LiquidationPrice, i32)>,
}

/// A wallet's recent borrows as just read from the database, kept unless a
/// borrow was written since the read started.
#[derive(Message)]
#[rtype(result = "()")]
pub struct KeepBorrows {
    pub owner: Pubkey,
    pub generation: u64,
    pub borrows: Borrows,
}

/// Borrows of these wallets were written: their cached lists are stale. This
/// replica's writer sends it after COMMIT (read-your-writes); the others get it
/// through NOTIFY.
#[derive(Message)]
#[rtype(result = "()")]
pub struct BorrowsChanged(pub Vec<Pubkey>);

/// Subscribe to the liquidation feed: a candidate_start for every owner already
/// under water (all of them, whatever their number), then live events; or, for
/// a reconnect whose `Last-Event-ID` can resume, the events it missed, then
/// live ones (docs/design.md §11). The answer is the response body.
#[derive(Message)]
#[rtype(result = "ActorResult<FeedStream>")]
pub struct Subscribe {
    /// The subscriber's connection socket (cut when the service stops).
    pub socket: Option<std::os::fd::RawFd>,
    /// The request's `Last-Event-ID` header.
    pub last_event_id: Option<String>,
    /// The view streamed (docs/design.md §15, §17).
    pub view: ViewKey,
}

/// The service is stopping: every feed stream ends (their queues are dropped),
/// so a graceful stop does not wait its whole timeout for them.
#[derive(Message)]
#[rtype(result = "()")]
pub struct CloseStreams;

/// Each pool's token and oracle (GET /api/pools/status), rendered.
#[derive(Message)]
#[rtype(result = "ActorResult<Bytes>")]
pub struct PoolStatus;

/// Counts for logs, health and benchmarks.
#[derive(Message)]
#[rtype(result = "CacheStats")]
pub struct Stats;

#[derive(Debug, Clone, Serialize)]
pub struct CacheStats {
    pub ready: bool,
    /// The LISTEN connection is up (else changes by others may be missed).
    pub listening: bool,
    pub pools: usize,
    pub owners: usize,
    pub unhealthy_owners: usize,
    pub watched_owners: usize,
    pub evictions: u64,
    pub subscribers: usize,
    pub dropped_subscribers: u64,
    pub feed_version: u64,
    /// Reads of the database (change log reads, evicted owners, loads).
    pub reads: u64,
    /// Each pool's feed as pools status shows it, by pool address, where
    /// feeds are read (docs/design.md §17).
    pub feeds: Option<Vec<(String, PoolFeed)>>,
}

/// A question for the risk lens (docs/design.md §10), answered rendered, or
/// refused when it names a pool the lens cannot move.
#[derive(Message)]
#[rtype(result = "ActorResult<Result<Bytes, RiskError>>")]
pub struct Risk(pub RiskQuery);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RiskQuery {
    /// These pools moved by these basis points; up to `limit` accounts listed.
    Shock {
        shocks: Vec<(Pubkey, i64)>,
        limit: usize,
    },
    /// One pool's liquidation curve.
    Curve {
        pool: Pubkey,
        from_bps: i64,
        to_bps: i64,
        steps: u32,
    },
}
