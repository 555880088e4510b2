//! The live chain, on the leader only (`chain_sync` starts and stops it with
//! the ingester lease): the RPC websocket's notifications (`chain::stream`)
//! turned into index writes within milliseconds, where the poll took up to
//! `sync.interval_seconds`.
//!
//! Notifications are gathered (what arrives within 20 ms, at most 100
//! accounts) and go through the one ingest step (`crate::ingest`) under §7's
//! slot rule: an account whose notification slot proves it newer than what the
//! index may hold is written as it came; the others (some nodes, surfpool
//! among them, stamp every notification with the subscription's slot), and
//! any write the stored row's newer slot refuses, are re-read over HTTP in one
//! getMultipleAccounts through the chain reader's gate and written with the
//! read's own slot. A re-read that does not show the notified data yet is
//! repeated shortly. Each write's changes go straight to this replica's
//! engine (`health_cache::commit`). Only registered pools and their positions
//! are indexed; a notification for another pool is ignored. Accounts that stop
//! matching (closed positions) get no notification: reconciliation removes
//! them.
//!
//! After every (re)connect the subscriptions come first, then a reconcile (a
//! full refresh), so nothing changed while the socket was down is missed.
//! A dead or frozen socket is noticed by `chain::stream` (silence timeout) and
//! reconnected with backoff and jitter.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use actix::prelude::*;
use chrono::{DateTime, Utc};
use deadpool_postgres::Pool;
use rand::Rng;
use tokio::sync::mpsc;

use crate::actors::chain_reader::{ChainReader, GetSlot, ReadAccounts};
use crate::actors::db_writer::Writers;
use crate::actors::health_cache::{HealthCache, Reaches, commit};
use crate::chain::stream::{Notified, StreamEvent, run_connection};
use crate::db::registered::is_registered;
use crate::domain::pubkey::Pubkey;
use crate::error::ApiResult;
use crate::ingest::{Ingest, NotifiedWrite, sort_out};

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
    pub cache: Addr<HealthCache>,
    pub ingest: Ingest,
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
        let connection = run_connection(&deps.ws_url, &deps.ingest.program, deps.silence, &tx);
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
    // Until the chain's slot at subscription is known, no notification's slot
    // proves anything: every account is re-read.
    let mut trusted_above = u64::MAX;
    while let Some(event) = rx.recv().await {
        // When the batch's first notification arrived (freshness metrics).
        let heard = Instant::now();
        let mut batch = Vec::new();
        match event {
            StreamEvent::Subscribed => {
                tracing::info!(url = %deps.ws_url, "chain websocket subscribed");
                to.do_send(StreamReport::Up);
                trusted_above = subscribed_at(deps).await;
                continue;
            }
            StreamEvent::Account(account) => batch.push(account),
        }
        let until = tokio::time::Instant::now() + GATHER_FOR;
        while batch.len() < GATHER_MAX {
            match tokio::time::timeout_at(until, rx.recv()).await {
                Ok(Some(StreamEvent::Account(account))) => batch.push(account),
                Ok(Some(StreamEvent::Subscribed)) => {
                    to.do_send(StreamReport::Up);
                    trusted_above = subscribed_at(deps).await;
                }
                _ => break,
            }
        }
        crate::metrics::sync_notified(batch.len() as u64);
        to.do_send(StreamReport::Notified { at: Utc::now() });
        if let Err(e) = apply(deps, &mut registered, trusted_above, &batch, heard).await {
            // The next reconcile brings these accounts anyway.
            tracing::warn!(error = %e, accounts = batch.len(), "notified accounts not applied");
        }
    }
}

/// The chain's slot once a subscription is confirmed: a notification stamped
/// at or below it may carry the subscription's slot, not its change's.
async fn subscribed_at(deps: &StreamDeps) -> u64 {
    let slot = deps
        .chain
        .send(GetSlot {
            deadline: Duration::from_secs(2),
        })
        .await;
    match slot {
        Ok(Ok(slot)) => slot,
        _ => u64::MAX,
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
        let found = is_registered(&deps.db, deps.ingest.cluster, pool).await?;
        if found {
            self.pools.insert(*pool);
        }
        Ok(found)
    }
}

/// One batch through the ingest step: written as notified where the slot rule
/// allows, the rest re-read and written with the read's slot.
async fn apply(
    deps: &StreamDeps,
    registered: &mut Registered,
    trusted_above: u64,
    batch: &[Notified],
    heard: Instant,
) -> ApiResult<()> {
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
    for write in writes {
        let account = write.account();
        if !commit_notified(deps, write, heard).await? {
            reread.insert(account); // the row holds a newer read
        }
    }
    if reread.is_empty() {
        return Ok(());
    }
    let again = wanted.only(&reread);
    let keys = again.keys();
    // The latest data each account was notified with.
    let notified: HashMap<Pubkey, &[u8]> = batch
        .iter()
        .map(|n| (n.pubkey, n.data.as_slice()))
        .collect();
    let read = || async { deps.chain.send(ReadAccounts { keys: keys.clone() }).await? };
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
    let reads: BTreeMap<Pubkey, _> = keys.iter().copied().zip(reads.iter().cloned()).collect();
    for write in deps.ingest.reread(&again, &reads) {
        commit_notified(deps, write, heard).await?;
    }
    Ok(())
}

/// Commits one account's write; false when the slot guard refused it.
async fn commit_notified(
    deps: &StreamDeps,
    write: NotifiedWrite,
    heard: Instant,
) -> ApiResult<bool> {
    let reaches = Reaches::Queued { heard: Some(heard) };
    Ok(match write {
        NotifiedWrite::Pool(w) => commit(&deps.writer, &deps.cache, w, reaches)
            .await?
            .is_some(),
        NotifiedWrite::Position(w) => !commit(&deps.writer, &deps.cache, w, reaches)
            .await?
            .is_empty(),
    })
}
