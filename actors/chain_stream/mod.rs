//! The live chain, on the leader only (`chain_sync` starts and stops it with
//! the ingester lease): account updates from the configured source
//! (`chain::source`: the RPC websocket, or a Yellowstone gRPC stream) turned
//! into index writes within milliseconds, where the poll took up to
//! `sync.interval_seconds`.
//!
//! Updates are gathered into batches that end with their slot (docs/design.md
//! §14: a gRPC slot's status, a websocket's announcement of a later slot) and
//! go through the one ingest step (`crate::ingest`): a websocket's under §7's
//! slot rule, with re-reads (`notified`); a gRPC stream's as written, under
//! the (slot, write version) order rule (`streamed`). Each write's changes go
//! straight to this replica's engine (`health_cache::commit`). Only
//! registered pools and their positions are indexed.
//!
//! After every (re)connect the subscription comes first, then a reconcile (a
//! full refresh), so nothing changed while the source was down is missed;
//! unless a gRPC stream resumed from the last slot it delivered (replay). A
//! dead or frozen source is noticed by its silence and reconnected
//! (`chain::source` has the schedule).

mod forks;
mod gather;
mod grpc_batch;
mod overlay;
mod websocket_batch;

pub(crate) use forks::SlotReport;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use actix::prelude::*;
use chrono::{DateTime, Utc};
use deadpool_postgres::Pool;
use tokio::sync::mpsc;

use crate::chain::grpc::{self, Resume};
use crate::chain::source::{AccountUpdate, Backoff, Ended, NamedFeeds, StreamEvent, wait_out};
use crate::chain::websocket;
use crate::chain_reader::{ChainReader, GetSlot};
use crate::db_writer::Writers;
use crate::domain::forks::Commitment;
use crate::domain::pubkey::Pubkey;
use crate::error::ActorResult;
use crate::health_cache::{HealthCache, Reaches, commit};
use crate::ingest::{Ingest, by_slot};
use gather::{GATHER_MAX, GATHER_SLOT_FOR, Gathering, slot_still_open};
use lendex_store::chain_writes::{AccountWrite, SlotWrites};
use lendex_store::registered::is_registered;

/// How often the source's slot is held against the RPC node's (lag).
const LAG_EVERY: Duration = Duration::from_secs(5);

/// Where live updates come from.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    Websocket { url: String },
    Grpc(grpc::Endpoint),
}

impl Source {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Source::Websocket { .. } => "websocket",
            Source::Grpc(_) => "grpc",
        }
    }

    pub(crate) fn url(&self) -> &str {
        match self {
            Source::Websocket { url } => url,
            Source::Grpc(endpoint) => &endpoint.url,
        }
    }
}

/// What the stream needs; owned by the task.
#[derive(Clone)]
pub(crate) struct StreamDeps {
    pub db: Pool,
    pub chain: Addr<ChainReader>,
    pub writer: Writers,
    pub cache: Addr<HealthCache>,
    pub ingest: Ingest,
    pub source: Source,
    pub silence: Duration,
    /// What the gRPC source reads at; at `processed`, the slot tree's bound.
    pub commitment: Commitment,
    pub max_unconfirmed_slots: usize,
    /// The feed accounts the pools name, when feeds are read
    /// (docs/design.md §17).
    pub feeds: Option<NamedFeeds>,
}

impl StreamDeps {
    /// Whether `account` is a feed some pool names now.
    pub(crate) fn is_feed(&self, account: &Pubkey) -> bool {
        (self.feeds.as_ref()).is_some_and(|named| named.borrow().contains(account))
    }
}

/// Reports to the chain-sync actor (health, reconcile).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub enum StreamReport {
    /// Subscribed; reconcile unless the source resent what was missed.
    Up {
        reconcile: bool,
    },
    Down {
        reason: String,
    },
    AccountUpdate {
        at: DateTime<Utc>,
    },
    /// The slots reached, and what troubles the slot tree (health).
    Slots(SlotReport),
    /// The index may miss writes: the slot tree was contradicted or
    /// overflowed, or released writes were not committed.
    Reconcile {
        why: &'static str,
    },
}

/// Streams forever: connect, subscribe, apply, and after any failure wait and
/// reconnect. Stopped by aborting its task.
pub(crate) async fn stream_forever(deps: StreamDeps, to: Recipient<StreamReport>) {
    let mut backoff = Backoff::default();
    let mut resume = Resume::default();
    // Kept across reconnects: what is confirmed stays confirmed.
    let mut forks = forks::Forks::new(deps.max_unconfirmed_slots);
    let source = deps.source.name();
    loop {
        let (tx, rx) = mpsc::channel(4096);
        let started = Instant::now();
        let connection = async {
            match &deps.source {
                Source::Websocket { url } => {
                    let (program, feeds) = (&deps.ingest.program, deps.feeds.clone());
                    websocket::run_connection(url, program, deps.silence, feeds, &tx).await
                }
                Source::Grpc(endpoint) => {
                    let (program, commitment) = (deps.ingest.program, deps.commitment);
                    grpc::run_connection(
                        endpoint,
                        &program,
                        commitment,
                        deps.silence,
                        &mut resume,
                        deps.feeds.clone(),
                        &tx,
                    )
                    .await
                }
            }
        };
        let applying = async {
            match deps.commitment {
                Commitment::Confirmed => apply_updates(&deps, rx, &to).await,
                Commitment::Processed => forks.apply(&deps, rx, &to).await,
            }
        };
        let ended = tokio::select! {
            ended = connection => ended,
            () = applying => Ended::reached("stopped applying"),
        };
        tracing::warn!(
            source,
            url = %deps.source.url(),
            reason = %ended.reason,
            "chain stream down; polling continues, reconnecting"
        );
        to.do_send(StreamReport::Down {
            reason: ended.reason.clone(),
        });
        let wait = backoff.wait_jittered(started.elapsed());
        wait_for_node(&deps.source, wait, ended.reached).await;
    }
}

/// Waits out the backoff, asking the node meanwhile whether it answers its
/// protocol (`chain::source::wait_out`).
async fn wait_for_node(source: &Source, wait: Duration, answered: bool) {
    match source {
        Source::Websocket { url } => wait_out(wait, answered, || websocket::answers(url)).await,
        Source::Grpc(endpoint) => wait_out(wait, answered, || grpc::answers(endpoint)).await,
    }
}

/// Gathers updates and applies them, until the connection's sender goes.
async fn apply_updates(
    deps: &StreamDeps,
    mut rx: mpsc::Receiver<StreamEvent>,
    to: &Recipient<StreamReport>,
) {
    let mut state = Applying::default();
    while let Some(event) = rx.recv().await {
        // When the batch's first update arrived (freshness metrics).
        let heard = Instant::now();
        let mut batch = Vec::new();
        match event {
            StreamEvent::Account(account) => batch.push(account),
            other => {
                state.on(deps, other, to).await;
                continue;
            }
        }
        let first = tokio::time::Instant::now();
        // (A websocket's notification slots prove nothing: some nodes stamp
        // the subscription's. Its slot notifications say when a slot is over.)
        let by_slot = matches!(deps.source, Source::Grpc(_));
        let mut gathering = if by_slot {
            Gathering::BySlot
        } else {
            Gathering::Announced(state.source_slot)
        };
        let (gather_for, whole_slot) = gathering.bounds();
        let mut until = first + gather_for;
        while batch.len() < GATHER_MAX || (whole_slot && slot_still_open(&batch, by_slot)) {
            match tokio::time::timeout_at(until, rx.recv()).await {
                Ok(Some(StreamEvent::Account(account))) => batch.push(account),
                Ok(Some(other)) => {
                    let ends = match &other {
                        StreamEvent::Slot(s) => gathering.ends_at(s, &batch, first.elapsed()),
                        _ => false,
                    };
                    state.on(deps, other, to).await;
                    if ends {
                        break;
                    }
                }
                // A gRPC slot not closed yet by its status: its other writes
                // may still be on the way (a busy machine spreads a burst).
                Err(_) if by_slot && until < first + GATHER_SLOT_FOR => {
                    until = first + GATHER_SLOT_FOR;
                }
                _ => break,
            }
        }
        crate::metrics::sync_notified(batch.len() as u64);
        crate::chain::metrics::stream::updates(deps.source.name(), batch.len() as u64);
        to.do_send(StreamReport::AccountUpdate { at: Utc::now() });
        let applied = match deps.source {
            Source::Websocket { .. } => {
                websocket_batch::apply(
                    deps,
                    &mut state.registered,
                    state.trusted_above,
                    &batch,
                    heard,
                )
                .await
            }
            Source::Grpc(_) => grpc_batch::apply(deps, &mut state.registered, &batch, heard).await,
        };
        if let Err(e) = applied {
            // The next reconcile brings these accounts anyway.
            tracing::warn!(error = %e, accounts = batch.len(), "streamed accounts not applied");
        }
    }
}

/// What the apply loop keeps between batches.
struct Applying {
    registered: Registered,
    /// A websocket notification stamped at or below this slot may carry the
    /// subscription's slot: it proves nothing (until known, nothing does).
    trusted_above: u64,
    /// The source's latest slot, and when it was last held against the node's.
    source_slot: Option<u64>,
    lag_checked: Option<Instant>,
    subscriptions: u64,
}

impl Default for Applying {
    fn default() -> Self {
        Applying {
            registered: Registered::default(),
            trusted_above: u64::MAX,
            source_slot: None,
            lag_checked: None,
            subscriptions: 0,
        }
    }
}

impl Applying {
    async fn on(&mut self, deps: &StreamDeps, event: StreamEvent, to: &Recipient<StreamReport>) {
        match event {
            StreamEvent::Subscribed { replayed } => {
                tracing::info!(
                    source = deps.source.name(),
                    replayed,
                    "chain stream subscribed"
                );
                self.subscriptions += 1;
                if self.subscriptions > 1 {
                    crate::chain::metrics::stream::reconnected(deps.source.name());
                }
                to.do_send(StreamReport::Up {
                    reconcile: !replayed,
                });
                if let Source::Websocket { .. } = deps.source {
                    self.trusted_above = subscribed_at(deps).await;
                }
            }
            StreamEvent::Slot(update) => {
                let slot = update.slot;
                // (At processed the slot tree reports the slots.)
                if deps.commitment == Commitment::Confirmed
                    && update.status.confirms()
                    && self.source_slot.is_none_or(|s| s < slot)
                {
                    to.do_send(StreamReport::Slots(SlotReport::confirmed(slot)));
                }
                self.source_slot = Some(self.source_slot.unwrap_or(0).max(slot));
                if self.lag_checked.is_none_or(|at| at.elapsed() >= LAG_EVERY) {
                    self.lag_checked = Some(Instant::now());
                    let (chain, source, theirs) = (deps.chain.clone(), deps.source.name(), slot);
                    // Off the apply loop: the node's answer may take a while.
                    actix_rt::spawn(async move {
                        let deadline = Duration::from_secs(2);
                        if let Ok(Ok(tip)) = chain.send(GetSlot { deadline }).await {
                            crate::chain::metrics::stream::lag(source, tip.saturating_sub(theirs));
                        }
                    });
                }
            }
            StreamEvent::Account(_) => unreachable!("accounts are batched by the caller"),
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
/// keeps a pool's first updates after its registration from being lost.
#[derive(Default)]
struct Registered {
    pools: HashSet<Pubkey>,
}

impl Registered {
    async fn contains(&mut self, deps: &StreamDeps, pool: &Pubkey) -> ActorResult<bool> {
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

/// Commits a batch's writes, those of each slot together (one transaction,
/// one change of the index), older slots first. Says of each account
/// whether it was written (false: the order rule refused it).
async fn commit_slots(
    deps: &StreamDeps,
    writes: Vec<AccountWrite>,
    heard: Instant,
) -> ActorResult<Vec<(Pubkey, bool)>> {
    let mut out = Vec::with_capacity(writes.len());
    for writes in by_slot(writes) {
        let accounts: Vec<Pubkey> = writes.iter().map(AccountWrite::account).collect();
        let reaches = Reaches::Queued { heard: Some(heard) };
        let written = commit(&deps.writer, &deps.cache, SlotWrites { writes }, reaches).await?;
        out.extend(accounts.into_iter().zip(written));
    }
    Ok(out)
}

/// The accounts of a batch, for the websocket's re-read.
fn latest_data(batch: &[AccountUpdate]) -> std::collections::HashMap<Pubkey, &[u8]> {
    batch
        .iter()
        .map(|n| (n.pubkey, n.data.as_slice()))
        .collect()
}
