//! The slot tree against a brute-force model of the same rules: random fork
//! trees, their writes and statuses in random orders (children first, writes
//! before statuses, missing confirmations, dead after completed, repeats),
//! both views compared after every step.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use proptest::prelude::*;

use super::{SlotStatus, SlotTree, SlotWrite};
use crate::pubkey::Pubkey;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TestWrite {
    pub slot: u64,
    pub version: u64,
    pub account: u8,
}

impl SlotWrite for TestWrite {
    fn slot(&self) -> u64 {
        self.slot
    }
    fn write_version(&self) -> u64 {
        self.version
    }
    fn account(&self) -> Pubkey {
        Pubkey::new_from_array([self.account; 32])
    }
}

#[derive(Debug, Clone)]
enum Event {
    Write(TestWrite),
    Status(u64, Option<u64>, SlotStatus),
}

/// Everything received so far, judged from scratch at every step.
#[derive(Default)]
struct Model {
    parents: HashMap<u64, u64>,
    statuses: HashMap<u64, HashSet<SlotStatus>>,
    writes: Vec<TestWrite>,
    /// Slots that had a status or a write (what the tree can know of).
    seen: BTreeSet<u64>,
}

/// Each account's newest write, by (slot, write version).
type View = BTreeMap<u8, (u64, u64)>;

impl Model {
    fn take(&mut self, event: &Event) {
        match event {
            Event::Write(w) => {
                self.seen.insert(w.slot);
                self.writes.push(w.clone());
            }
            Event::Status(slot, parent, status) => {
                self.seen.insert(*slot);
                if let Some(p) = parent {
                    self.parents.insert(*slot, *p);
                }
                self.statuses.entry(*slot).or_default().insert(*status);
            }
        }
    }

    /// The slot and its known ancestors, descending.
    fn walk(&self, slot: u64) -> Vec<u64> {
        let mut out = vec![slot];
        while let Some(p) = self.parents.get(out.last().unwrap()) {
            out.push(*p);
        }
        out
    }

    fn has(&self, slot: u64, status: SlotStatus) -> bool {
        self.statuses
            .get(&slot)
            .is_some_and(|s| s.contains(&status))
    }

    fn confirmed(&self) -> BTreeSet<u64> {
        let mut out = BTreeSet::new();
        for slot in self.statuses.keys() {
            if self.has(*slot, SlotStatus::Confirmed) || self.has(*slot, SlotStatus::Finalized) {
                out.extend(self.walk(*slot));
            }
        }
        out
    }

    /// The known links pass below `below` without meeting it.
    fn skips(walk: &[u64], below: u64) -> bool {
        walk.iter().any(|s| *s < below) && !walk.contains(&below)
    }

    fn abandoned(&self, confirmed: &BTreeSet<u64>) -> BTreeSet<u64> {
        let all: BTreeSet<u64> = (self.seen.iter().copied())
            .chain(self.parents.values().copied())
            .collect();
        let unrelated = |s: u64| {
            confirmed.iter().any(|&c| {
                (s < c && Self::skips(&self.walk(c), s)) || (s > c && Self::skips(&self.walk(s), c))
            })
        };
        let base: BTreeSet<u64> = (all.iter().copied())
            .filter(|s| !confirmed.contains(s))
            .filter(|s| self.has(*s, SlotStatus::Dead) || unrelated(*s))
            .collect();
        (all.iter().copied())
            .filter(|s| self.walk(*s).iter().any(|a| base.contains(a)))
            .collect()
    }

    fn best(&self, confirmed: &BTreeSet<u64>, abandoned: &BTreeSet<u64>) -> Vec<u64> {
        let Some(&highest) = confirmed.last() else {
            return Vec::new();
        };
        let tip = (self.seen.iter().rev())
            .filter(|s| **s > highest && !abandoned.contains(s))
            .find(|s| self.walk(**s).contains(&highest));
        let Some(&tip) = tip else {
            return Vec::new();
        };
        let mut chain: Vec<u64> = self
            .walk(tip)
            .into_iter()
            .filter(|s| *s > highest)
            .collect();
        chain.reverse();
        chain
    }

    fn view(&self, slots: &BTreeSet<u64>) -> View {
        let mut view = View::new();
        for w in self.writes.iter().filter(|w| slots.contains(&w.slot)) {
            let entry = view.entry(w.account).or_insert((w.slot, w.version));
            *entry = (*entry).max((w.slot, w.version));
        }
        view
    }
}

/// A tiny deterministic generator, so a case is its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A fork tree, the chain that gets confirmed in it, and every event its
/// slots cause, shuffled. Returns the events and the true confirmed chain.
fn script(seed: u64, slots: u64) -> (Vec<Event>, BTreeSet<u64>) {
    let mut rng = Rng(seed | 1);
    let mut parent = HashMap::new();
    for slot in 2..=slots {
        // Mostly a chain, now and then a fork off an earlier slot.
        let p = if rng.chance(70) {
            slot - 1
        } else {
            1 + rng.below(slot - 1)
        };
        parent.insert(slot, p);
    }
    let tip = 1 + rng.below(slots);
    let mut chain = BTreeSet::from([tip]);
    let mut at = tip;
    while let Some(p) = parent.get(&at) {
        chain.insert(*p);
        at = *p;
    }
    let mut events = Vec::new();
    let mut version = 0;
    for slot in 1..=slots {
        let p = parent.get(&slot).copied();
        let with_parent = |rng: &mut Rng, percent| p.filter(|_| rng.chance(percent));
        if rng.chance(80) {
            events.push(Event::Status(slot, p, SlotStatus::CreatedBank));
        }
        for status in [
            SlotStatus::FirstShredReceived,
            SlotStatus::Processed,
            SlotStatus::Completed,
        ] {
            if rng.chance(60) {
                let link = with_parent(&mut rng, 50);
                events.push(Event::Status(slot, link, status));
            }
        }
        if chain.contains(&slot) {
            if rng.chance(50) {
                let link = with_parent(&mut rng, 50);
                events.push(Event::Status(slot, link, SlotStatus::Confirmed));
            }
            if rng.chance(15) {
                events.push(Event::Status(slot, p, SlotStatus::Finalized));
            }
        } else if rng.chance(25) {
            events.push(Event::Status(slot, None, SlotStatus::Dead));
        }
        for _ in 0..rng.below(4) {
            version += 1;
            let account = rng.below(4) as u8;
            events.push(Event::Write(TestWrite {
                slot,
                version,
                account,
            }));
        }
    }
    // Repeats.
    for i in 0..events.len() {
        if rng.chance(10) {
            events.push(events[i].clone());
        }
    }
    // Any order.
    let mut keyed: Vec<(u64, Event)> = events.into_iter().map(|e| (rng.next(), e)).collect();
    keyed.sort_by_key(|(k, _)| *k);
    (keyed.into_iter().map(|(_, e)| e).collect(), chain)
}

fn apply(confirmed_view: &mut View, released: Vec<(u64, Vec<TestWrite>)>) {
    for (_, writes) in released {
        for w in writes {
            // The ingest path's order rule: never over a newer write.
            let entry = confirmed_view
                .entry(w.account)
                .or_insert((w.slot, w.version));
            *entry = (*entry).max((w.slot, w.version));
        }
    }
}

fn run(seed: u64, slots: u64) -> Result<(), TestCaseError> {
    let (events, true_chain) = script(seed, slots);
    let mut tree = SlotTree::new(10_000);
    let mut model = Model::default();
    let mut confirmed_view = View::new();
    for (i, event) in events.iter().enumerate() {
        model.take(event);
        let step = match event.clone() {
            Event::Write(w) => tree.write(w),
            Event::Status(slot, parent, status) => tree.status(slot, parent, status, i as u64),
        };
        prop_assert_eq!(step.problem, None, "a consistent script raises no problem");
        for (slot, _) in &step.released {
            prop_assert!(
                true_chain.contains(slot),
                "slot {} released, not on the chain",
                slot
            );
        }
        apply(&mut confirmed_view, step.released);

        let confirmed = model.confirmed();
        let abandoned = model.abandoned(&confirmed);
        let best = model.best(&confirmed, &abandoned);
        for slot in &model.seen {
            prop_assert_eq!(
                tree.is_confirmed(*slot),
                confirmed.contains(slot),
                "confirmed {}",
                slot
            );
            prop_assert_eq!(
                tree.is_abandoned(*slot),
                abandoned.contains(slot),
                "abandoned {}",
                slot
            );
        }
        prop_assert_eq!(
            tree.best_chain(),
            best.as_slice(),
            "best chain after {:?}",
            event
        );
        prop_assert_eq!(tree.highest_confirmed(), confirmed.last().copied());

        prop_assert_eq!(&confirmed_view, &model.view(&confirmed), "confirmed view");
        let mut processed = confirmed_view.clone();
        for (_, w) in tree.processed() {
            processed.insert(w.account, (w.slot, w.version));
        }
        let mut expected = model.view(&confirmed);
        expected.extend(model.view(&best.iter().copied().collect()));
        prop_assert_eq!(processed, expected, "processed view");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn both_views_match_the_model_after_every_step(seed in any::<u64>(), slots in 1u64..24) {
        run(seed, slots)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Hostile input (loops, parents above children, contradictions, slots
    /// far away): never a panic, and the bound holds at every step.
    #[test]
    fn any_input_keeps_the_bound(seed in any::<u64>(), limit in 1usize..12) {
        let mut rng = Rng(seed | 1);
        let mut tree = SlotTree::new(limit);
        for at in 0..300 {
            let slot = if rng.chance(3) { rng.next() } else { rng.below(60) };
            let step = if rng.chance(30) {
                tree.write(TestWrite { slot, version: rng.below(5), account: rng.below(3) as u8 })
            } else {
                let parent = rng.chance(70).then(|| rng.below(70));
                let status = SlotStatus::ALL[rng.below(7) as usize];
                tree.status(slot, parent, status, at)
            };
            prop_assert!(tree.open_slots() <= limit);
            if let Some(problem) = &step.problem {
                prop_assert!(!problem.contradicts() || step.reconcile, "{:?} reconciles", problem);
            }
            prop_assert!(tree.best_chain().windows(2).all(|w| w[0] < w[1]));
            prop_assert!(tree.tip() >= tree.highest_confirmed());
        }
    }
}
