//! A websocket batch (docs/design.md §7): an account whose notification slot
//! proves it newer than what the index may hold is written as it came; the
//! others (some nodes, surfpool among them, stamp every notification with the
//! subscription's slot), and any write the stored row's newer slot refuses,
//! are re-read over HTTP in one getMultipleAccounts through the chain reader's
//! gate and written with the read's own slot. A re-read that does not show the
//! notified data yet is repeated shortly. Accounts that stop matching (closed
//! positions) get no notification: reconciliation removes them.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use super::{Registered, StreamDeps, commit_slots, latest_data};
use crate::chain::source::AccountUpdate;
use crate::chain_reader::ReadAccounts;
use crate::domain::pubkey::Pubkey;
use crate::domain::raw::AccountRead;
use crate::error::ActorResult;
use crate::ingest::sort_out;
use lendex_store::chain_writes::AccountWrite;

/// A re-read that does not yet show the notified data is tried again after
/// this, at most this many times.
const SETTLE_AFTER: Duration = Duration::from_millis(100);
const SETTLE_TRIES: usize = 20;

/// One batch through the ingest step: written as notified where the slot rule
/// allows, the rest re-read and written with the read's slot.
pub(super) async fn apply(
    deps: &StreamDeps,
    registered: &mut Registered,
    trusted_above: u64,
    batch: &[AccountUpdate],
    heard: Instant,
) -> ActorResult<()> {
    let (feeds, batch): (Vec<AccountUpdate>, Vec<AccountUpdate>) =
        batch.iter().cloned().partition(|a| deps.is_feed(&a.pubkey));
    if !feeds.is_empty() {
        apply_feeds(deps, trusted_above, &feeds, heard).await?;
    }
    let batch = batch.as_slice();
    let mut wanted = sort_out(batch);
    let mut keep = HashSet::new();
    for pool in wanted.all_pools() {
        if registered.contains(deps, &pool).await? {
            keep.insert(pool);
        }
    }
    wanted.retain(|pool| keep.contains(pool));
    if wanted.is_empty() {
        return Ok(());
    }
    let (writes, mut reread) = deps.ingest.notified(batch, &wanted, trusted_above);
    for (account, written) in commit_slots(deps, writes, heard).await? {
        if !written {
            reread.insert(account); // the row holds a newer read
        }
    }
    if reread.is_empty() {
        return Ok(());
    }
    let again = wanted.only(&reread);
    let keys = again.keys();
    let reads = settled_read(deps, &keys, batch).await?;
    let reads: BTreeMap<Pubkey, _> = keys.iter().copied().zip(reads.iter().cloned()).collect();
    // One read, one slot: written together.
    commit_slots(deps, deps.ingest.reread(&again, &reads), heard).await?;
    Ok(())
}

/// The pools' feeds notified (docs/design.md §17): written as they came when
/// the slot proves them newer, else re-read over HTTP; a write the stored
/// row's newer read refuses is re-read too (a node may stamp every
/// notification with the subscription's slot, older than the last
/// reconcile's read). The same rules as a pool's.
async fn apply_feeds(
    deps: &StreamDeps,
    trusted_above: u64,
    feeds: &[AccountUpdate],
    heard: Instant,
) -> ActorResult<()> {
    let latest: BTreeMap<Pubkey, &AccountUpdate> = feeds.iter().map(|n| (n.pubkey, n)).collect();
    let mut writes = Vec::new();
    let mut reread = Vec::new();
    for (key, update) in latest {
        match update.slot > trusted_above {
            true => writes.extend(deps.ingest.streamed_feed(update).map(AccountWrite::Feed)),
            false => reread.push(key),
        }
    }
    for (account, written) in commit_slots(deps, writes, heard).await? {
        if !written {
            reread.push(account);
        }
    }
    if reread.is_empty() {
        return Ok(());
    }
    let reads = settled_read(deps, &reread, feeds).await?;
    let read = reread.iter().zip(reads.iter());
    let writes = read
        .filter_map(|(key, read)| deps.ingest.feed(key, read, false))
        .map(AccountWrite::Feed)
        .collect();
    commit_slots(deps, writes, heard).await?;
    Ok(())
}

/// `keys` read over HTTP, again shortly while a read does not show the data
/// the batch notified: it may come from a view not yet caught up (surfpool
/// answers HTTP reads from the last slot for a moment). A newer change comes
/// with its own notification.
async fn settled_read(
    deps: &StreamDeps,
    keys: &[Pubkey],
    batch: &[AccountUpdate],
) -> ActorResult<Vec<AccountRead>> {
    // The latest data each account was notified with.
    let notified = latest_data(batch);
    let read = || async {
        let keys = keys.to_vec();
        deps.chain.send(ReadAccounts { keys }).await?
    };
    let mut reads = read().await?;
    for _ in 0..SETTLE_TRIES {
        let behind = keys.iter().zip(reads.iter()).any(|(key, read)| {
            notified
                .get(key)
                .is_some_and(|data| read.account.as_ref().map(|a| a.data.as_slice()) != Some(*data))
        });
        if !behind {
            break;
        }
        tokio::time::sleep(SETTLE_AFTER).await;
        reads = read().await?;
    }
    Ok(reads.to_vec())
}
