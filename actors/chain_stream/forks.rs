//! The gRPC source at `processed` (docs/design.md §15): every write and slot
//! status goes through the slot tree. A slot's writes reach the one ingest
//! path (`grpc_batch`, one change per slot) when the tree says the slot is
//! confirmed, never before; an abandoned slot's never. What the tree holds of
//! the best chain is the processed overlay. The tree outlives reconnects:
//! what is confirmed stays confirmed, and a subscription that could not
//! resume forgets only what was open.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use actix::prelude::*;
use chrono::Utc;
use tokio::sync::mpsc;

use super::overlay::Publisher;
use super::{Applying, StreamDeps, StreamReport, grpc_batch};
use crate::chain::metrics::forks as metrics;
use crate::chain::source::{AccountUpdate, StreamEvent};
use crate::domain::forks::{SlotTree, Step};

/// An overlay the database refused is tried again after this long.
const RETRY_PUBLISH: Duration = Duration::from_secs(1);

/// How often, at most, the arrival of writes is reported to health.
const REPORT_WRITES_EVERY: Duration = Duration::from_millis(100);

/// The slots a source has reached, as /api/health shows them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlotReport {
    /// The processed view's slot: the best chain's tip, else the highest
    /// confirmed slot.
    pub processed: Option<u64>,
    /// The highest confirmed slot.
    pub confirmed: Option<u64>,
    /// Why the processed view cannot be trusted now, while that lasts.
    pub problem: Option<String>,
}

impl SlotReport {
    /// A source at `confirmed`: both views are the confirmed one.
    pub fn confirmed(slot: u64) -> SlotReport {
        SlotReport {
            processed: Some(slot),
            confirmed: Some(slot),
            problem: None,
        }
    }
}

pub(super) struct Forks {
    tree: SlotTree<AccountUpdate>,
    limit: usize,
    /// The tree's clock: milliseconds since this instant.
    started: Instant,
    reported: SlotReport,
    /// The last contradiction, named in health until the tree is sound.
    contradiction: Option<String>,
    /// Problems already logged (each kind once; all are counted).
    logged: HashSet<&'static str>,
    writes_reported: Option<Instant>,
    /// The processed overlay, as laid in the database for every replica.
    publisher: Publisher,
}

impl Forks {
    pub(super) fn new(limit: usize) -> Forks {
        Forks {
            tree: SlotTree::new(limit),
            limit,
            started: Instant::now(),
            reported: SlotReport::default(),
            contradiction: None,
            logged: HashSet::new(),
            writes_reported: None,
            publisher: Publisher::new(),
        }
    }

    /// Takes one connection's events until its sender goes.
    pub(super) async fn apply(
        &mut self,
        deps: &StreamDeps,
        mut rx: mpsc::Receiver<StreamEvent>,
        to: &Recipient<StreamReport>,
    ) {
        let mut state = Applying::default();
        loop {
            // An overlay not yet laid (the database refused it) is tried again.
            let event = if self.publisher.dirty() {
                match tokio::time::timeout(RETRY_PUBLISH, rx.recv()).await {
                    Ok(event) => event,
                    Err(_) => {
                        self.publish(deps, &mut state).await;
                        continue;
                    }
                }
            } else {
                rx.recv().await
            };
            let Some(event) = event else {
                break;
            };
            let heard = Instant::now();
            let best_before = self.tree.best_chain().to_vec();
            let step = match event {
                StreamEvent::Account(account) => {
                    crate::chain::metrics::stream::updates("grpc", 1);
                    if self
                        .writes_reported
                        .is_none_or(|at| at.elapsed() >= REPORT_WRITES_EVERY)
                    {
                        self.writes_reported = Some(heard);
                        to.do_send(StreamReport::AccountUpdate { at: Utc::now() });
                    }
                    self.tree.write(account)
                }
                StreamEvent::Slot(update) => {
                    metrics::status(update.status.name());
                    let at = self.started.elapsed().as_millis() as u64;
                    let step = self
                        .tree
                        .status(update.slot, update.parent, update.status, at);
                    // The lag against the node.
                    state.on(deps, StreamEvent::Slot(update), to).await;
                    step
                }
                StreamEvent::Subscribed { replayed } => {
                    // Not resumed: what was open may never be completed.
                    if !replayed {
                        self.tree.forget_open();
                    }
                    state.on(deps, event, to).await;
                    self.publisher.changed(true, heard);
                    self.report(to);
                    if self.publisher.due(rx.is_empty()) {
                        self.publish(deps, &mut state).await;
                    }
                    continue;
                }
            };
            if step.processed_changed {
                // Slots that left the best chain unconfirmed: their writes
                // roll back.
                let confirmed: Vec<u64> = step.confirmed.iter().map(|(slot, _)| *slot).collect();
                let rolled_back = (best_before.iter()).any(|slot| {
                    !self.tree.best_chain().contains(slot) && !confirmed.contains(slot)
                });
                self.publisher.changed(rolled_back, heard);
            }
            self.after(deps, &mut state, step, heard, to).await;
            if self.publisher.due(rx.is_empty()) {
                self.publish(deps, &mut state).await;
            }
        }
    }

    async fn publish(&mut self, deps: &StreamDeps, state: &mut Applying) {
        let published = self
            .publisher
            .publish(deps, &mut state.registered, &self.tree)
            .await;
        if let Err(e) = published {
            tracing::warn!(error = %e, "processed overlay not published; trying again");
        }
    }

    /// What a step changed: released writes committed, the rest counted.
    async fn after(
        &mut self,
        deps: &StreamDeps,
        state: &mut Applying,
        step: Step<AccountUpdate>,
        heard: Instant,
        to: &Recipient<StreamReport>,
    ) {
        for delay in step.confirmed.iter().filter_map(|(_, delay)| *delay) {
            metrics::confirmed_after(Duration::from_millis(delay));
        }
        if !step.abandoned.is_empty() || step.dropped_writes > 0 {
            metrics::abandoned(step.abandoned.len() as u64, step.dropped_writes);
        }
        if !step.evicted.is_empty() {
            metrics::evicted(step.evicted.len() as u64);
        }
        if let Some(problem) = &step.problem {
            metrics::problem(problem.name());
            if self.logged.insert(problem.name()) {
                tracing::warn!(
                    ?problem,
                    "slot update refused by the slot tree (counted from now on)"
                );
            }
            if problem.contradicts() {
                self.contradiction = Some(format!("{problem:?}"));
            }
        }
        for (slot, writes) in step.released {
            if let Err(e) = grpc_batch::apply(deps, &mut state.registered, &writes, heard).await {
                tracing::warn!(error = %e, slot, "confirmed writes not applied; reconciling");
                to.do_send(StreamReport::Reconcile {
                    why: "confirmed writes were not committed",
                });
            }
        }
        if step.reconcile {
            let why = match &step.problem {
                Some(problem) if problem.contradicts() => "the source contradicted the slot tree",
                _ => "unconfirmed slots were dropped before their confirmation",
            };
            to.do_send(StreamReport::Reconcile { why });
        }
        if step.processed_changed {
            metrics::processed_accounts(self.tree.processed().len());
        }
        self.report(to);
    }

    /// Tells health when the slots reached, or the tree's trouble, changed.
    fn report(&mut self, to: &Recipient<StreamReport>) {
        metrics::open_slots(self.tree.open_slots());
        let problem = if self.tree.unsound() {
            Some(format!(
                "the chain source contradicted the slot tree ({}): reconciling; the processed \
                 view is the confirmed one until a slot is confirmed",
                self.contradiction.as_deref().unwrap_or("unknown")
            ))
        } else if self.tree.overflowed() {
            Some(format!(
                "no slot confirmed within rpc.max_unconfirmed_slots ({}): the oldest \
                 unconfirmed slots were dropped",
                self.limit
            ))
        } else {
            None
        };
        let report = SlotReport {
            processed: self.tree.tip(),
            confirmed: self.tree.highest_confirmed(),
            problem,
        };
        if report != self.reported {
            self.reported = report.clone();
            to.do_send(StreamReport::Slots(report));
        }
    }
}
