//! The slot tree (docs/design.md §15): slots linked by their parents, each
//! confirmed, abandoned or still open; the writes of open slots held until
//! their slot is decided.

use std::collections::{BTreeMap, BTreeSet};

use super::{SlotStatus, SlotWrite};
use crate::pubkey::Pubkey;

/// Something the source sent that the tree cannot take as it is. Counted and
/// logged by the caller; never a panic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// A parent numbered at or above its child (a loop, if taken): ignored.
    ParentNotBelow { slot: u64, parent: u64 },
    /// A slot more than the bound above anything seen: ignored.
    FarFuture { slot: u64 },
    /// A write of a slot below what the tree still remembers: dropped.
    TooOld { slot: u64 },
    /// A slot announced with a second, different parent.
    ParentChanged { slot: u64, was: u64, now: u64 },
    /// A confirmed status for a slot judged abandoned.
    ConfirmedAbandoned { slot: u64 },
    /// A dead status for a confirmed slot.
    DeadConfirmed { slot: u64 },
    /// A confirmed slot whose parent lies below another confirmed slot it
    /// does not descend from: two confirmed forks.
    ConfirmedFork { slot: u64 },
}

impl Problem {
    /// The label in /metrics.
    pub fn name(&self) -> &'static str {
        match self {
            Problem::ParentNotBelow { .. } => "parent_not_below",
            Problem::FarFuture { .. } => "far_future",
            Problem::TooOld { .. } => "too_old",
            Problem::ParentChanged { .. } => "parent_changed",
            Problem::ConfirmedAbandoned { .. } => "confirmed_abandoned",
            Problem::DeadConfirmed { .. } => "dead_confirmed",
            Problem::ConfirmedFork { .. } => "confirmed_fork",
        }
    }

    /// The tree's beliefs and the source disagree: what it held beyond the
    /// confirmed slots is dropped, the index is reconciled, and the processed
    /// view is the confirmed one until a slot is confirmed again.
    pub fn contradicts(&self) -> bool {
        matches!(
            self,
            Problem::ParentChanged { .. }
                | Problem::ConfirmedAbandoned { .. }
                | Problem::DeadConfirmed { .. }
                | Problem::ConfirmedFork { .. }
        )
    }
}

/// What one update changed.
#[derive(Debug)]
pub struct Step<W> {
    /// Writes of slots now confirmed, for the one ingest path: slots
    /// ascending, each slot's writes by write version (one change per slot).
    pub released: Vec<(u64, Vec<W>)>,
    /// Slots newly confirmed, ascending, each with the milliseconds since its
    /// first status (none when it had none).
    pub confirmed: Vec<(u64, Option<u64>)>,
    /// Slots newly abandoned.
    pub abandoned: Vec<u64>,
    /// Writes of abandoned slots dropped (held ones, or one arriving late).
    pub dropped_writes: u64,
    /// Open slots dropped by the bound, or by a contradiction.
    pub evicted: Vec<u64>,
    pub problem: Option<Problem>,
    /// The index must be reconciled: a contradiction, or confirmations
    /// resumed after open slots were evicted (their writes are lost).
    pub reconcile: bool,
    /// The processed view may differ: the best chain, or a write in it, changed.
    pub processed_changed: bool,
}

impl<W> Default for Step<W> {
    fn default() -> Self {
        Step {
            released: Vec::new(),
            confirmed: Vec::new(),
            abandoned: Vec::new(),
            dropped_writes: 0,
            evicted: Vec::new(),
            problem: None,
            reconcile: false,
            processed_changed: false,
        }
    }
}

/// An open slot: neither confirmed nor abandoned yet.
struct Node<W> {
    parent: Option<u64>,
    dead: bool,
    confirms: bool,
    /// When its first status arrived (the caller's milliseconds).
    seen_at: Option<u64>,
    /// Its writes, by (write version, account): one per key, in order.
    writes: BTreeMap<(u64, Pubkey), W>,
}

impl<W> Node<W> {
    fn new() -> Self {
        Node {
            parent: None,
            dead: false,
            confirms: false,
            seen_at: None,
            writes: BTreeMap::new(),
        }
    }
}

/// Where a slot's known links lead.
#[derive(Debug, Clone, Copy)]
enum Reach {
    /// To this confirmed slot, the first met.
    Confirmed(u64),
    /// To this slot, whose parent is not known (it may be the slot itself).
    Unknown(u64),
    Abandoned,
}

/// The tree. `limit` bounds the open slots kept (`rpc.max_unconfirmed_slots`);
/// the confirmed and abandoned slots are remembered as far back as that too.
pub struct SlotTree<W> {
    limit: u64,
    open: BTreeMap<u64, Node<W>>,
    /// Recent confirmed slots, with their parent when known.
    confirmed: BTreeMap<u64, Option<u64>>,
    abandoned: BTreeSet<u64>,
    highest: Option<u64>,
    /// The highest slot taken, against which "far in the future" is judged.
    top: Option<u64>,
    /// The best chain above the highest confirmed slot, ascending.
    best: Vec<u64>,
    /// Since a contradiction, until a slot is confirmed again.
    unsound: bool,
    /// Open slots were evicted, and no slot was confirmed since.
    overflowed: bool,
}

impl<W: SlotWrite> SlotTree<W> {
    pub fn new(limit: usize) -> Self {
        SlotTree {
            limit: limit.max(1) as u64,
            open: BTreeMap::new(),
            confirmed: BTreeMap::new(),
            abandoned: BTreeSet::new(),
            highest: None,
            top: None,
            best: Vec::new(),
            unsound: false,
            overflowed: false,
        }
    }

    /// An account write, possibly before any status of its slot.
    pub fn write(&mut self, write: W) -> Step<W> {
        let mut step = Step::default();
        let slot = write.slot();
        if self.far_future(slot) {
            step.problem = Some(Problem::FarFuture { slot });
            return step;
        }
        if self.confirmed.contains_key(&slot) {
            step.released.push((slot, vec![write]));
            return step;
        }
        if self.abandoned.contains(&slot) {
            step.dropped_writes = 1;
            return step;
        }
        if self.below_window(slot) {
            step.problem = Some(Problem::TooOld { slot });
            step.dropped_writes = 1;
            return step;
        }
        self.top = self.top.max(Some(slot));
        let key = (write.write_version(), write.account());
        match self.open.get_mut(&slot) {
            Some(node) => {
                node.writes.insert(key, write);
                step.processed_changed = self.best.binary_search(&slot).is_ok();
            }
            None => {
                let mut node = Node::new();
                node.writes.insert(key, write);
                self.open.insert(slot, node);
                // A new slot may be a confirmed slot's parent, or fall in a gap.
                self.settle(&mut step, None);
            }
        }
        step
    }

    /// A slot status, with the slot's parent when the source gives it.
    pub fn status(
        &mut self,
        slot: u64,
        parent: Option<u64>,
        status: SlotStatus,
        at_ms: u64,
    ) -> Step<W> {
        let mut step = Step::default();
        if self.far_future(slot) {
            step.problem = Some(Problem::FarFuture { slot });
            return step;
        }
        if let Some(parent) = parent.filter(|p| *p >= slot) {
            step.problem = Some(Problem::ParentNotBelow { slot, parent });
            return step;
        }
        if let Some(recorded) = self.confirmed.get_mut(&slot) {
            if status == SlotStatus::Dead {
                self.contradiction(Problem::DeadConfirmed { slot }, &mut step);
                return step;
            }
            match (*recorded, parent) {
                (Some(was), Some(now)) if was != now => {
                    let problem = Problem::ParentChanged { slot, was, now };
                    self.contradiction(problem, &mut step);
                }
                (None, Some(now)) => {
                    // A new link may show a fork below it.
                    *recorded = Some(now);
                    self.settle(&mut step, Some(at_ms));
                }
                _ => {}
            }
            return step;
        }
        if self.abandoned.contains(&slot) {
            if status.confirms() {
                self.contradiction(Problem::ConfirmedAbandoned { slot }, &mut step);
            }
            return step;
        }
        if self.below_window(slot) {
            return step;
        }
        self.top = self.top.max(Some(slot));
        let node = self.open.entry(slot).or_insert_with(Node::new);
        node.seen_at.get_or_insert(at_ms);
        match (node.parent, parent) {
            (Some(was), Some(now)) if was != now => {
                self.contradiction(Problem::ParentChanged { slot, was, now }, &mut step);
                return step;
            }
            (None, Some(now)) => node.parent = Some(now),
            _ => {}
        }
        node.dead |= status == SlotStatus::Dead;
        node.confirms |= status.confirms();
        self.settle(&mut step, Some(at_ms));
        step
    }

    /// A reconnect the source cannot replay: what was open is forgotten (its
    /// writes come again with the reconcile), and the processed view is the
    /// confirmed one until new slots arrive. Says whether that view changed.
    pub fn forget_open(&mut self) -> bool {
        self.open.clear();
        let changed = !self.best.is_empty();
        self.best.clear();
        changed
    }

    /// The highest confirmed slot.
    pub fn highest_confirmed(&self) -> Option<u64> {
        self.highest
    }

    /// The best chain above the highest confirmed slot, ascending.
    pub fn best_chain(&self) -> &[u64] {
        &self.best
    }

    /// The processed view's slot: the best chain's tip, else the highest
    /// confirmed slot.
    pub fn tip(&self) -> Option<u64> {
        self.best.last().copied().or(self.highest)
    }

    /// Open slots kept.
    pub fn open_slots(&self) -> usize {
        self.open.len()
    }

    /// Open slots were dropped by the bound and none confirmed since.
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// A contradiction was met and no slot confirmed since.
    pub fn unsound(&self) -> bool {
        self.unsound
    }

    pub fn is_confirmed(&self, slot: u64) -> bool {
        self.confirmed.contains_key(&slot)
    }

    pub fn is_abandoned(&self, slot: u64) -> bool {
        self.abandoned.contains(&slot)
    }

    /// The processed overlay: each account's newest write (by slot, then
    /// write version) among the best chain's slots.
    pub fn processed(&self) -> BTreeMap<Pubkey, &W> {
        let mut out = BTreeMap::new();
        for slot in &self.best {
            for ((_, account), write) in &self.open[slot].writes {
                out.insert(*account, write);
            }
        }
        out
    }

    fn far_future(&self, slot: u64) -> bool {
        self.top
            .is_some_and(|top| slot > top.saturating_add(self.limit))
    }

    fn below_window(&self, slot: u64) -> bool {
        self.highest
            .is_some_and(|h| slot < h.saturating_sub(self.limit))
    }

    /// Decides what the known links and statuses decide: confirmations
    /// (explicit, then implied), the bound, abandonments, the best chain.
    fn settle(&mut self, step: &mut Step<W>, at_ms: Option<u64>) {
        if let Err(problem) = self.confirm(step, at_ms).and_then(|()| self.one_chain()) {
            self.contradiction(problem, step);
            return;
        }
        self.bound(step);
        let reach = self.reaches();
        for (slot, _) in reach.iter().filter(|(_, r)| matches!(r, Reach::Abandoned)) {
            let node = self.open.remove(slot).expect("a reach is of an open slot");
            self.abandoned.insert(*slot);
            step.abandoned.push(*slot);
            step.dropped_writes += node.writes.len() as u64;
        }
        let best = self.choose_best(&reach);
        if best != self.best {
            self.best = best;
            step.processed_changed = true;
        }
        self.prune(step);
    }

    /// Moves every open slot that is now confirmed to the confirmed slots,
    /// releasing its writes, lowest first.
    fn confirm(&mut self, step: &mut Step<W>, at_ms: Option<u64>) -> Result<(), Problem> {
        let mut newly: BTreeSet<u64> = (self.open.iter())
            .filter(|(_, node)| node.confirms)
            .map(|(slot, _)| *slot)
            .collect();
        // A confirmed slot whose parent arrived after it.
        for parent in self.confirmed.values().flatten() {
            if self.open.contains_key(parent) {
                newly.insert(*parent);
            }
        }
        let mut walk: Vec<u64> = newly.iter().copied().collect();
        while let Some(slot) = walk.pop() {
            let Some(parent) = self.open.get(&slot).and_then(|node| node.parent) else {
                continue;
            };
            if self.abandoned.contains(&parent) {
                return Err(Problem::ConfirmedAbandoned { slot: parent });
            }
            if self.open.contains_key(&parent) && newly.insert(parent) {
                walk.push(parent);
            }
        }
        if let Some(slot) = newly.iter().find(|slot| self.open[slot].dead) {
            return Err(Problem::DeadConfirmed { slot: *slot });
        }
        for slot in newly {
            let node = self.open.remove(&slot).expect("newly confirmed is open");
            self.confirmed.insert(slot, node.parent);
            self.highest = self.highest.max(Some(slot));
            let delay = at_ms
                .zip(node.seen_at)
                .map(|(at, seen)| at.saturating_sub(seen));
            step.confirmed.push((slot, delay));
            if !node.writes.is_empty() {
                step.released
                    .push((slot, node.writes.into_values().collect()));
            }
        }
        if !step.confirmed.is_empty() {
            self.unsound = false;
            if std::mem::take(&mut self.overflowed) {
                step.reconcile = true;
            }
        }
        Ok(())
    }

    /// The confirmed slots form one chain: no confirmed slot's parent lies
    /// below another confirmed slot between them.
    fn one_chain(&self) -> Result<(), Problem> {
        for (&slot, parent) in &self.confirmed {
            if let Some(parent) = parent
                && self.confirmed.range(parent + 1..slot).next().is_some()
            {
                return Err(Problem::ConfirmedFork { slot });
            }
        }
        Ok(())
    }

    /// Past the bound, the oldest open slots go (their writes with them).
    fn bound(&mut self, step: &mut Step<W>) {
        while self.open.len() as u64 > self.limit {
            let (slot, _) = self.open.pop_first().expect("over the bound is not empty");
            step.evicted.push(slot);
            self.overflowed = true;
        }
    }

    /// Each open slot's reach, lowest first (a parent is lower than its
    /// child, so its reach is known when the child's is judged).
    fn reaches(&self) -> BTreeMap<u64, Reach> {
        let mut reach = BTreeMap::new();
        for (&slot, node) in &self.open {
            let r = match node.parent {
                _ if node.dead => Reach::Abandoned,
                None => Reach::Unknown(slot),
                Some(p) if self.abandoned.contains(&p) => Reach::Abandoned,
                Some(p) if self.confirmed.contains_key(&p) => Reach::Confirmed(p),
                Some(p) => reach.get(&p).copied().unwrap_or(Reach::Unknown(p)),
            };
            // A confirmed slot between the slot and where its links lead:
            // the slot skipped it, so it descends from none of it.
            let skipped =
                |from: u64| from < slot && self.confirmed.range(from + 1..slot).next().is_some();
            let r = match r {
                Reach::Confirmed(from) | Reach::Unknown(from) if skipped(from) => Reach::Abandoned,
                r => r,
            };
            // A confirmed slot above it whose parent lies below it: the
            // slot is not its ancestor.
            let jumped_over = || {
                (self.confirmed.range(slot + 1..))
                    .any(|(_, parent)| parent.is_some_and(|p| p < slot))
            };
            let r = match r {
                Reach::Abandoned => Reach::Abandoned,
                _ if jumped_over() => Reach::Abandoned,
                r => r,
            };
            reach.insert(slot, r);
        }
        reach
    }

    /// The highest open slot whose links lead to the highest confirmed slot,
    /// and its ancestors above that slot.
    fn choose_best(&self, reach: &BTreeMap<u64, Reach>) -> Vec<u64> {
        let Some(highest) = self.highest.filter(|_| !self.unsound) else {
            return Vec::new();
        };
        let tip = reach.iter().rev().find(|(slot, r)| {
            matches!(r, Reach::Confirmed(f) if *f == highest) && self.open.contains_key(slot)
        });
        let Some((&tip, _)) = tip else {
            return Vec::new();
        };
        let mut chain = vec![tip];
        let mut at = tip;
        while let Some(parent) = self.open.get(&at).and_then(|node| node.parent) {
            if parent == highest {
                break;
            }
            chain.push(parent);
            at = parent;
        }
        chain.reverse();
        chain
    }

    /// Forgets what lies more than the bound below the highest confirmed slot.
    /// An open slot that old was never decided, and will not be: evicted.
    fn prune(&mut self, step: &mut Step<W>) {
        let Some(floor) = self.highest.map(|h| h.saturating_sub(self.limit)) else {
            return;
        };
        self.confirmed = self.confirmed.split_off(&floor);
        self.abandoned = self.abandoned.split_off(&floor);
        let kept = self.open.split_off(&floor);
        step.evicted
            .extend(std::mem::replace(&mut self.open, kept).into_keys());
    }

    /// The source contradicts the tree: keep the highest confirmed slot (what
    /// was released is durable), drop the rest, reconcile, and serve the confirmed view as the processed
    /// one until a slot is confirmed again.
    fn contradiction(&mut self, problem: Problem, step: &mut Step<W>) {
        if let Problem::ConfirmedAbandoned { slot } = problem {
            self.abandoned.remove(&slot);
            self.confirmed.insert(slot, None);
            self.highest = self.highest.max(Some(slot));
        }
        step.evicted
            .extend(std::mem::take(&mut self.open).into_keys());
        self.abandoned.clear();
        // Judging starts over from the highest confirmed slot alone: the
        // links that led here are what the source contradicted.
        self.confirmed.clear();
        if let Some(highest) = self.highest {
            self.confirmed.insert(highest, None);
        }
        if !self.best.is_empty() {
            self.best.clear();
            step.processed_changed = true;
        }
        self.unsound = true;
        step.problem = Some(problem);
        step.reconcile = true;
    }
}
