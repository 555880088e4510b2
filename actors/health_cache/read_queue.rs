//! The cache's reads of the database, one at a time, and who waits on them:
//! which read is due next, and which waiters a finished read answers. Plain
//! state, no I/O: the actor runs the reads (`pipeline.rs`).
//!
//! One read runs at a time: reads can complete out of order, and the next
//! must start from what the previous one applied. A waiter is answered only
//! by a read that started after it asked (docs/design.md §13), so what it
//! waits for was committed before that read looked.

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

/// What the next reads must do: set by the actor's handlers, taken by `next`.
#[derive(Default)]
pub(super) struct Wants {
    pub reload_all: bool,
    /// Ticks were committed that the engine may not hold.
    pub read_log: bool,
    /// Owners the engine no longer holds, to be read back.
    pub owners: HashSet<Pubkey>,
    /// Pools whose evicted owners must be re-loaded from the database.
    pub fallback_pools: HashSet<Pubkey>,
    /// Some waiter wants the health factors written before it is answered.
    pub write_through: bool,
    /// When the first NOTIFY of the next read was heard (freshness metrics).
    pub notify_heard: Option<Instant>,
    /// When the chain notified the first of this replica's writes it holds.
    pub chain_heard: Option<Instant>,
}

/// A read to run, with what it takes along.
#[derive(Debug, PartialEq)]
pub(super) enum Job {
    /// Everything, with the clock, in one snapshot.
    Reload,
    /// Owners the engine evicted, as they are now.
    Owners {
        owners: Vec<Pubkey>,
        fallback_pools: Vec<Pubkey>,
    },
    /// The change log after the last tick applied.
    Log {
        notify_heard: Option<Instant>,
        chain_heard: Option<Instant>,
    },
}

/// The kind of a finished read: what it can answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Reload,
    Log,
    Owners,
}

impl Job {
    pub(super) fn kind(&self) -> Kind {
        match self {
            Job::Reload => Kind::Reload,
            Job::Owners { .. } => Kind::Owners,
            Job::Log { .. } => Kind::Log,
        }
    }
}

impl Kind {
    /// A reload holds everything a log read or an owner read would have.
    fn satisfies(self, need: Need) -> bool {
        matches!(
            (self, need),
            (Kind::Reload, _) | (Kind::Log, Need::Log) | (Kind::Owners, Need::Owners)
        )
    }
}

/// How a read ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ended {
    /// It did what it was for.
    Done,
    /// It gave way to a reload (the log was pruned past us, or too long):
    /// its waiters wait for that.
    GaveWay,
    /// The database failed it: a reload is due, and its waiters are told.
    Failed,
}

/// Waiters a finished read answers.
pub(super) struct Answered {
    pub waiters: Vec<Waiter>,
    /// One of them asked for the health factors to be committed first.
    pub write_through: bool,
}

#[derive(Default)]
pub(super) struct ReadQueue {
    wants: Wants,
    /// Each with what it needs and the reads started when it asked.
    waiters: Vec<(Need, u64, Waiter)>,
    running: bool,
    /// Reads started so far; the number of the last one.
    started: u64,
}

impl ReadQueue {
    /// Records what is wanted next, and who waits for it.
    pub(super) fn ask(&mut self, edit: impl FnOnce(&mut Wants), waiter: Option<(Need, Waiter)>) {
        edit(&mut self.wants);
        if let Some((need, waiter)) = waiter {
            self.waiters.push((need, self.started, waiter));
        }
    }

    /// Owners and pools a tick could not apply from memory: read back next.
    pub(super) fn read_back(
        &mut self,
        owners: impl IntoIterator<Item = Pubkey>,
        pools: impl IntoIterator<Item = Pubkey>,
    ) {
        self.wants.owners.extend(owners);
        self.wants.fallback_pools.extend(pools);
    }

    /// A read is running.
    pub(super) fn running(&self) -> bool {
        self.running
    }

    /// Reads started so far (a resume parked now is answered by a later one).
    pub(super) fn started(&self) -> u64 {
        self.started
    }

    /// The next read and its number, if none runs and one is due. Before the
    /// engine's first load only a reload can run; while history holds the
    /// changes, none.
    pub(super) fn next(&mut self, loaded: bool, held: bool) -> Option<(Job, u64)> {
        if self.running {
            return None;
        }
        let wants = &mut self.wants;
        let job = if wants.reload_all {
            wants.reload_all = false;
            wants.read_log = false;
            Job::Reload
        } else if !loaded || held {
            return None;
        } else if !wants.owners.is_empty() || !wants.fallback_pools.is_empty() {
            Job::Owners {
                owners: wants.owners.drain().collect(),
                fallback_pools: wants.fallback_pools.drain().collect(),
            }
        } else if wants.read_log {
            wants.read_log = false;
            Job::Log {
                notify_heard: wants.notify_heard.take(),
                chain_heard: wants.chain_heard.take(),
            }
        } else {
            return None;
        };
        self.running = true;
        self.started += 1;
        Some((job, self.started))
    }

    /// Read `number` of `kind` ended: the waiters it answers (none when it
    /// gave way), and a reload due after a failure.
    pub(super) fn finish(&mut self, kind: Kind, number: u64, ended: Ended) -> Answered {
        self.running = false;
        if ended != Ended::Done {
            self.wants.reload_all = true;
        }
        if ended == Ended::GaveWay {
            return Answered {
                waiters: Vec::new(),
                write_through: false,
            };
        }
        let (done, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.waiters)
            .into_iter()
            .partition(|(need, asked, _)| *asked < number && kind.satisfies(*need));
        self.waiters = waiting;
        let write_through = !done.is_empty() && std::mem::take(&mut self.wants.write_through);
        Answered {
            waiters: done.into_iter().map(|(_, _, w)| w).collect(),
            write_through,
        }
    }
}

/// The earlier of two instants, either possibly unknown.
pub(super) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        _ => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiter() -> (Waiter, oneshot::Receiver<ActorResult<()>>) {
        oneshot::channel()
    }

    fn log(q: &mut ReadQueue, need: Need) -> oneshot::Receiver<ActorResult<()>> {
        let (tx, rx) = waiter();
        q.ask(|w| w.read_log = true, Some((need, tx)));
        rx
    }

    #[test]
    fn nothing_runs_before_the_first_load_but_the_load() {
        let mut q = ReadQueue::default();
        let _rx = log(&mut q, Need::Log);
        assert_eq!(q.next(false, false), None);
        q.ask(|w| w.reload_all = true, None);
        assert_eq!(q.next(false, false), Some((Job::Reload, 1)));
        // The reload holds the log too.
        q.finish(Kind::Reload, 1, Ended::Done);
        assert_eq!(q.next(true, false), None);
    }

    #[test]
    fn one_read_at_a_time_owners_first_and_none_while_held() {
        let mut q = ReadQueue::default();
        q.ask(|w| w.read_log = true, None);
        q.read_back([Pubkey::new_unique()], []);
        assert_eq!(q.next(true, true), None, "history holds the changes");
        let (job, n) = q.next(true, false).unwrap();
        assert_eq!(job.kind(), Kind::Owners);
        assert_eq!(q.next(true, false), None, "one runs");
        q.finish(Kind::Owners, n, Ended::Done);
        let (job, n2) = q.next(true, false).unwrap();
        assert_eq!((job.kind(), n2), (Kind::Log, 2));
        assert!(q.running());
    }

    #[test]
    fn a_waiter_is_answered_only_by_a_read_started_after_it_asked() {
        let mut q = ReadQueue::default();
        let _first = log(&mut q, Need::Log);
        let (job, n) = q.next(true, false).unwrap();
        // Asks while read 1 runs: what it waits for may be after read 1 looked.
        let mut second = log(&mut q, Need::Log);
        let answered = q.finish(job.kind(), n, Ended::Done);
        assert_eq!(answered.waiters.len(), 1);
        assert!(second.try_recv().is_err());
        let (job, n) = q.next(true, false).unwrap();
        assert_eq!(n, 2);
        let answered = q.finish(job.kind(), n, Ended::Done);
        assert_eq!(answered.waiters.len(), 1);
    }

    #[test]
    fn each_read_answers_what_it_holds() {
        let mut q = ReadQueue::default();
        let _log = log(&mut q, Need::Log);
        let (tx, _owners) = waiter();
        q.ask(
            |w| {
                w.owners.insert(Pubkey::new_unique());
            },
            Some((Need::Owners, tx)),
        );
        let (job, n) = q.next(true, false).unwrap();
        assert_eq!(job.kind(), Kind::Owners);
        assert_eq!(q.finish(Kind::Owners, n, Ended::Done).waiters.len(), 1);
        let (tx, _reload) = waiter();
        q.ask(|w| w.reload_all = true, Some((Need::Reload, tx)));
        let (job, n) = q.next(true, false).unwrap();
        assert_eq!(job, Job::Reload);
        // The log waiter asked before read 2 started, so the reload answers it
        // (it asked before read 1 too, which could not); the reload waiter
        // asked before read 2 as well.
        assert_eq!(q.finish(Kind::Reload, n, Ended::Done).waiters.len(), 2);
    }

    #[test]
    fn a_read_that_gave_way_answers_nobody_and_a_failed_one_reloads() {
        let mut q = ReadQueue::default();
        let _rx = log(&mut q, Need::Log);
        let (job, n) = q.next(true, false).unwrap();
        assert!(q.finish(job.kind(), n, Ended::GaveWay).waiters.is_empty());
        let (job, n) = q.next(true, false).unwrap();
        assert_eq!(job, Job::Reload);
        let answered = q.finish(job.kind(), n, Ended::Failed);
        assert_eq!(answered.waiters.len(), 1, "told of the failure");
        assert_eq!(q.next(true, false).map(|(j, _)| j), Some(Job::Reload));
    }

    #[test]
    fn write_through_goes_with_the_waiters_it_came_with() {
        let mut q = ReadQueue::default();
        let (tx, _rx) = waiter();
        q.ask(
            |w| {
                w.read_log = true;
                w.write_through = true;
            },
            Some((Need::Log, tx)),
        );
        let (job, n) = q.next(true, false).unwrap();
        assert!(q.finish(job.kind(), n, Ended::Done).write_through);
        q.ask(|w| w.read_log = true, None);
        let (job, n) = q.next(true, false).unwrap();
        assert!(!q.finish(job.kind(), n, Ended::Done).write_through);
    }
}
