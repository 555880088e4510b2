//! A gRPC batch (decisions §14): each account's latest write, as it came,
//! under the (slot, write version) order rule the named queries hold; a
//! refused write is an older one, and nothing is re-read. A closed account
//! that the index holds as a position is removed; anything unusable is counted
//! and skipped (`ingest::streamed` says which).

use std::time::Instant;

use super::{Registered, StreamDeps, commit_write};
use crate::chain::source::Notified;
use crate::db::chain_writes::SyncPosition;
use crate::db::registered::held_position;
use crate::error::ApiResult;
use crate::ingest::{NotifiedWrite, Streamed, latest};

pub(super) async fn apply(
    deps: &StreamDeps,
    registered: &mut Registered,
    batch: &[Notified],
    heard: Instant,
) -> ApiResult<()> {
    for account in latest(batch) {
        match deps.ingest.streamed(account) {
            Streamed::Write { pool, write } => {
                // Another pool of the program: not the index's.
                if registered.contains(deps, &pool).await? {
                    commit_write(deps, *write, heard).await?;
                }
            }
            Streamed::Closed { account: key, slot } => {
                match held_position(&deps.db, deps.ingest.cluster, &key).await? {
                    Some((owner, pool)) => {
                        let removal = SyncPosition {
                            cluster: deps.ingest.cluster,
                            pool_address: pool.to_string(),
                            pool: None,
                            position_address: key.to_string(),
                            owner,
                            position: None,
                            slot,
                            write_version: account.write_version,
                        };
                        commit_write(deps, NotifiedWrite::Position(removal), heard).await?;
                    }
                    None if account.owner != deps.ingest.program => {
                        crate::metrics::stream::skipped("grpc", "another program's account");
                    }
                    // An account of the program closed that was never indexed.
                    None => {}
                }
            }
            Streamed::Skipped(why) => crate::metrics::stream::skipped("grpc", why),
        }
    }
    Ok(())
}
