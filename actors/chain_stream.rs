//! The live chain, on the leader only (`chain_sync` starts and stops it with
//! the ingester lease): the RPC websocket's notifications (`chain::stream`)
//! turned into index writes within milliseconds, where the poll took up to
//! `sync.interval_seconds`.
//!
//! A notification is not written as it comes: its slot cannot always prove its
//! data newer than the stored row (surfpool, for one, sends the subscription's
//! slot in every notification), so the accounts it names are re-read over HTTP
//! (batched: what arrives within 20 ms, at most 100 accounts, one
//! getMultipleAccounts through the chain reader's gate) and written with the
//! read's own slot, which the writes' slot guard never lets regress a row. A
//! re-read that does not show the notified data yet is repeated shortly.
//! Only registered pools and their positions are indexed; a notification for
//! another pool is ignored. Accounts that stop matching (closed positions) get
//! no notification: reconciliation removes them.
//!
//! After every (re)connect the subscriptions come first, then a reconcile (a
//! full refresh), so nothing changed while the socket was down is missed.
//! A dead or frozen socket is noticed by `chain::stream` (silence timeout) and
//! reconnected with backoff and jitter.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

use actix::prelude::*;
use chrono::{DateTime, Utc};
use deadpool_postgres::Pool;
use rand::Rng;
use tokio::sync::mpsc;

use crate::actors::chain_reader::{ChainReader, ReadAccounts};
use crate::actors::db_writer::{Writers, write};
use crate::chain::stream::{Notified, StreamEvent, run_connection};
use crate::db::chain_writes::{SyncPool, SyncPosition};
use crate::db::queries;
use crate::domain::accounts::{
    POOL_DISCRIMINATOR, POSITION_DISCRIMINATOR, POSITION_POOL_OFFSET, check_pool, check_position,
};
use crate::domain::pubkey::Pubkey;
use crate::error::{ApiError, ApiResult};

/// Notifications gathered into one re-read.
const GATHER_FOR: Duration = Duration::from_millis(20);
const GATHER_MAX: usize = 100;
/// Reconnect backoff: from the first to the last, doubling, with ±25% jitter.
const BACKOFF_FIRST: Duration = Duration::from_millis(500);
const BACKOFF_LAST: Duration = Duration::from_secs(30);
/// A re-read that does not yet show the notified data is tried again after
/// this, at most this many times.
const SETTLE_AFTER: Duration = Duration::from_millis(100);
const SETTLE_TRIES: usize = 20;

/// What the stream needs; owned by the task.
#[derive(Clone)]
pub struct StreamDeps {
    pub db: Pool,
    pub chain: Addr<ChainReader>,
    pub writer: Writers,
    pub cluster: &'static str,
    pub program: Pubkey,
    pub ws_url: String,
    pub silence: Duration,
}

/// Reports to the chain-sync actor (health, reconcile).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub enum StreamReport {
    /// Subscribed: reconcile now.
    Up,
    Down {
        reason: String,
    },
    Notified {
        at: DateTime<Utc>,
    },
}

/// Streams forever: connect, subscribe, apply, and after any failure wait and
/// reconnect. Stopped by aborting its task.
pub async fn stream_forever(deps: StreamDeps, to: Recipient<StreamReport>) {
    let mut backoff = BACKOFF_FIRST;
    loop {
        let (tx, rx) = mpsc::channel(4096);
        let started = Instant::now();
        let connection = run_connection(&deps.ws_url, &deps.program, deps.silence, &tx);
        let applying = apply_notifications(&deps, rx, &to);
        let reason = tokio::select! {
            reason = connection => reason,
            () = applying => "stopped applying".to_string(),
        };
        tracing::warn!(url = %deps.ws_url, %reason, "chain websocket down; polling continues, reconnecting");
        to.do_send(StreamReport::Down { reason });
        // A connection that lived a while starts the backoff over.
        if started.elapsed() > BACKOFF_LAST {
            backoff = BACKOFF_FIRST;
        }
        let jitter = rand::thread_rng().gen_range(0.75..1.25);
        tokio::time::sleep(backoff.mul_f64(jitter)).await;
        backoff = (backoff * 2).min(BACKOFF_LAST);
    }
}

/// Gathers notifications and applies them, until the connection's sender goes.
async fn apply_notifications(
    deps: &StreamDeps,
    mut rx: mpsc::Receiver<StreamEvent>,
    to: &Recipient<StreamReport>,
) {
    let mut registered = Registered::default();
    while let Some(event) = rx.recv().await {
        let mut batch = Vec::new();
        match event {
            StreamEvent::Subscribed => {
                tracing::info!(url = %deps.ws_url, "chain websocket subscribed");
                to.do_send(StreamReport::Up);
                continue;
            }
            StreamEvent::Account(account) => batch.push(account),
        }
        let until = tokio::time::Instant::now() + GATHER_FOR;
        while batch.len() < GATHER_MAX {
            match tokio::time::timeout_at(until, rx.recv()).await {
                Ok(Some(StreamEvent::Account(account))) => batch.push(account),
                Ok(Some(StreamEvent::Subscribed)) => to.do_send(StreamReport::Up),
                _ => break,
            }
        }
        crate::metrics::sync_notified(batch.len() as u64);
        to.do_send(StreamReport::Notified { at: Utc::now() });
        if let Err(e) = apply(deps, &mut registered, &batch).await {
            // The next reconcile brings these accounts anyway.
            tracing::warn!(error = %e, accounts = batch.len(), "notified accounts not applied");
        }
    }
}

/// The registered pools: known ones in memory; any other is looked up in the
/// database each time it shows up (one indexed read), since it may have been
/// registered a moment ago, on any replica. Not remembering a miss is what
/// keeps a pool's first notifications after its registration from being lost.
#[derive(Default)]
struct Registered {
    pools: HashSet<Pubkey>,
}

impl Registered {
    async fn contains(&mut self, deps: &StreamDeps, pool: &Pubkey) -> ApiResult<bool> {
        if self.pools.contains(pool) {
            return Ok(true);
        }
        let client = deps.db.get().await?;
        let stmt = client.prepare_cached(queries::POOL_IS_REGISTERED).await?;
        let found = client
            .query_opt(&stmt, &[&deps.cluster, &pool.to_string()])
            .await?
            .is_some();
        if found {
            self.pools.insert(*pool);
        }
        Ok(found)
    }
}

/// The accounts a batch names, by kind: pools to re-read, and positions with
/// their pool (a position's write carries its pool's state).
fn sort_out(batch: &[Notified]) -> (BTreeSet<Pubkey>, BTreeSet<(Pubkey, Pubkey)>) {
    let mut pools = BTreeSet::new();
    let mut positions = BTreeSet::new();
    for account in batch {
        if account.data.starts_with(&POOL_DISCRIMINATOR) {
            pools.insert(account.pubkey);
        } else if account.data.starts_with(&POSITION_DISCRIMINATOR) {
            let pool = account
                .data
                .get(POSITION_POOL_OFFSET..POSITION_POOL_OFFSET + 32)
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
                .map(Pubkey::new_from_array);
            if let Some(pool) = pool {
                positions.insert((account.pubkey, pool));
            }
        }
    }
    (pools, positions)
}

async fn apply(
    deps: &StreamDeps,
    registered: &mut Registered,
    batch: &[Notified],
) -> ApiResult<()> {
    let (mut pools, mut positions) = sort_out(batch);
    let mut keep = BTreeSet::new();
    for pool in pools.iter().chain(positions.iter().map(|(_, p)| p)) {
        if registered.contains(deps, pool).await? {
            keep.insert(*pool);
        }
    }
    pools.retain(|p| keep.contains(p));
    positions.retain(|(_, p)| keep.contains(p));
    for (_, pool) in &positions {
        pools.insert(*pool);
    }
    if pools.is_empty() {
        return Ok(());
    }
    let pool_keys: Vec<Pubkey> = pools.into_iter().collect();
    let position_keys: Vec<(Pubkey, Pubkey)> = positions.into_iter().collect();
    let keys: Vec<Pubkey> = pool_keys
        .iter()
        .copied()
        .chain(position_keys.iter().map(|(k, _)| *k))
        .collect();
    // The latest data each account was notified with.
    let notified: HashMap<Pubkey, &[u8]> = batch
        .iter()
        .map(|n| (n.pubkey, n.data.as_slice()))
        .collect();
    let read = || async {
        deps.chain
            .send(ReadAccounts { keys: keys.clone() })
            .await
            .map_err(|_| ApiError::Internal)?
    };
    let mut reads = read().await?;
    // A read that does not show what was notified may come from a view not yet
    // caught up (surfpool answers HTTP reads from the last slot for a moment):
    // read again shortly. A newer change comes with its own notification.
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
    let (pool_reads, position_reads) = reads.split_at(pool_keys.len());
    let mut states = Vec::with_capacity(pool_keys.len());
    for (key, read) in pool_keys.iter().zip(pool_reads) {
        let Ok(pool) = check_pool(&deps.program, read.parts()) else {
            continue;
        };
        states.push((*key, pool.clone()));
        let sync = SyncPool {
            cluster: deps.cluster,
            pool_address: key.to_string(),
            pool,
            slot: read.slot,
            symbol: None,
            catch_up: false,
        };
        write(&deps.writer, sync).await?;
    }
    for ((key, pool_key), read) in position_keys.iter().zip(position_reads) {
        let Some((_, pool)) = states.iter().find(|(k, _)| k == pool_key) else {
            continue;
        };
        // Closed positions are left to reconciliation (no notification names them).
        let Ok(position) = check_position(&deps.program, read.parts(), pool_key, None) else {
            continue;
        };
        let sync = SyncPosition {
            cluster: deps.cluster,
            pool_address: pool_key.to_string(),
            pool: pool.clone(),
            position_address: key.to_string(),
            owner: position.owner.to_string(),
            position: Some(position),
            slot: read.slot,
        };
        write(&deps.writer, sync).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifications_sorted_by_kind() {
        let pool = Pubkey::new_from_array([1; 32]);
        let position = Pubkey::new_from_array([2; 32]);
        let mut position_data = POSITION_DISCRIMINATOR.to_vec();
        position_data.extend_from_slice(&[7; 32]); // owner
        position_data.extend_from_slice(pool.as_ref());
        let notified = |pubkey, data: Vec<u8>| Notified {
            slot: 1,
            pubkey,
            owner: Pubkey::new_from_array([9; 32]),
            data,
        };
        let batch = [
            notified(pool, POOL_DISCRIMINATOR.to_vec()),
            notified(position, position_data),
            notified(Pubkey::new_from_array([3; 32]), vec![0; 8]),
        ];
        let (pools, positions) = sort_out(&batch);
        assert_eq!(pools.into_iter().collect::<Vec<_>>(), [pool]);
        assert_eq!(
            positions.into_iter().collect::<Vec<_>>(),
            [(position, pool)]
        );
    }
}
