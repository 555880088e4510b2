//! The health cache: the actor that owns the health engine (`crate::engine`,
//! pure) and feeds it, publishes what changed to the liquidators' feed
//! (`crate::feed`), and writes the engine's health factors back.
//!
//! - `messages`: what the rest of the service can ask of it;
//! - `handlers`: which method answers each message;
//! - `actor`: its state, private but for the views and the read queue the
//!   pipeline works on, and the methods that answer;
//! - `read_queue`: the reads of the database, one at a time, and who waits on
//!   them (plain state, unit-tested); `pipeline`: runs those reads (the change
//!   log tick after tick, a reload, evicted owners) and applies what they
//!   bring to the engine. Changes are announced by the LISTEN connection
//!   (`lendex_store::listen`) and by this replica's writes;
//! - `view`: the views served (confirmed, and processed where the chain is
//!   read at processed), each with its engine, rendered answers and feed, and
//!   the one place a read's commitment chooses one;
//! - `stream_hub`: the liquidators' streams and the state only they need
//!   (subscribers, replay window, parked resumes), called after each tick;
//! - `write_back`: the health factors stored, in paced chunks;
//! - `borrow_lists`: recent borrows per wallet, kept while nothing changes
//!   them; `listening`: the LISTEN connection's state and who waits for it;
//! - `history`: what the leader records of history (`HistoryLink`).
//!
//! `positions.health_factor_wad` is written only from here (the write-back of
//! `SetHealthFactors`), and on a cluster only by the holder of the ingester
//! lease; a sync answers only once its owner's value is committed.

mod actor;
mod borrow_lists;
mod handlers;
mod history;
mod listening;
mod messages;
mod pipeline;
mod read_queue;
mod stream_hub;
mod view;
mod views;
mod webhooks;
mod write_back;

pub use actor::{HealthCache, Settings};
pub use history::HistoryLink;
pub use messages::{
    AwaitListening, Borrows, BorrowsChanged, CacheStats, CatchUp, CloseStreams, FlushWrites,
    KeepBorrows, LoadAll, OwnerOf, OwnerPositions, OwnerRow, PoolStatus, Render, Risk, RiskQuery,
    Stats, Subscribe,
};
pub use views::NamedFeeds;
pub use webhooks::WebhookLink;

use actix::Addr;

use crate::db_writer::{Writers, write};
use crate::error::ActorResult;
use lendex_store::chain_writes::IndexWrite;

/// How a committed write reaches this replica's engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reaches {
    /// Answer once the engine has applied it and the owners' health factors
    /// are committed, so the caller reads its own write everywhere (a client's
    /// write).
    Awaited,
    /// Do not wait for the engine (background chain work); `heard` is when the
    /// chain notified the change, if it did (the freshness histogram).
    Queued { heard: Option<std::time::Instant> },
}

/// Commits a write of chain-derived rows (`lendex_store::chain_writes`, planned by
/// `crate::ingest`) and, when it changed the index, has this replica's engine
/// read the change log at once, as `reaches` says (every replica, this one
/// included, applies changes from the log in commit order; the others hear
/// of it through NOTIFY).
/// The write is committed either way, so a cache that cannot take it is
/// logged, not returned.
pub async fn commit<C: IndexWrite>(
    writer: &Writers,
    cache: &Addr<HealthCache>,
    cmd: C,
    reaches: Reaches,
) -> ActorResult<C::Output> {
    let output = write(writer, cmd).await?;
    if !C::changed(&output) {
        return Ok(output);
    }
    if let Reaches::Queued { heard } = reaches {
        cache.do_send(CatchUp {
            write_through: false,
            chain_heard: heard,
        });
        return Ok(output);
    }
    let apply = CatchUp {
        write_through: true,
        chain_heard: None,
    };
    match cache.send(apply).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "committed change applied, its health factors not yet written")
        }
        Err(e) => tracing::error!(error = %e, "health cache unreachable after a committed write"),
    }
    Ok(output)
}
