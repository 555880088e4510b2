//! A gRPC batch (docs/design.md §14): each account's latest write, as it came,
//! the writes of one slot committed together, under the (slot, write
//! version) order rule the named queries hold; a
//! refused write is an older one, and nothing is re-read. A closed account
//! that the index holds as a position is removed; anything unusable is counted
//! and skipped (`ingest::grpc` says which).

use std::time::Instant;

use super::{Registered, StreamDeps, commit_slots};
use crate::chain::source::AccountUpdate;
use crate::error::ActorResult;
use crate::ingest::{Streamed, latest};
use lendex_store::chain_writes::AccountWrite;
use lendex_store::chain_writes::SyncPosition;
use lendex_store::registered::held_position;

pub(super) async fn apply(
    deps: &StreamDeps,
    registered: &mut Registered,
    batch: &[AccountUpdate],
    heard: Instant,
) -> ActorResult<()> {
    let mut writes = Vec::new();
    for account in latest(batch) {
        if deps.is_feed(&account.pubkey) {
            // A pool's feed (docs/design.md §17): written as it came.
            writes.extend(deps.ingest.streamed_feed(account).map(AccountWrite::Feed));
            continue;
        }
        match deps.ingest.streamed(account) {
            Streamed::Write { pool, write } => {
                // Another pool of the program: not the index's.
                if registered.contains(deps, &pool).await? {
                    writes.push(*write);
                }
            }
            Streamed::Closed { account: key, slot } => {
                match held_position(&deps.db, deps.ingest.cluster, &key).await? {
                    Some((owner, pool)) => {
                        let (cluster, keys) = (deps.ingest.cluster, (pool, key, owner));
                        let removal =
                            SyncPosition::removal(cluster, keys, slot, account.write_version);
                        writes.push(AccountWrite::Position(removal));
                    }
                    None if account.owner != deps.ingest.program => {
                        crate::chain::metrics::stream::skipped("grpc", "another program's account");
                    }
                    // An account of the program closed that was never indexed.
                    None => {}
                }
            }
            Streamed::Skipped(why) => crate::chain::metrics::stream::skipped("grpc", why),
        }
    }
    commit_slots(deps, writes, heard).await?;
    Ok(())
}
