//! The slot tree's cases by name: the ones a reader of §15 asks about first,
//! the bound, and every problem.

use super::model_tests::TestWrite;
use super::{Problem, SlotStatus, SlotTree};
use SlotStatus::*;

fn w(slot: u64, version: u64, account: u8) -> TestWrite {
    TestWrite {
        slot,
        version,
        account,
    }
}

fn tree() -> SlotTree<TestWrite> {
    let mut tree = SlotTree::new(1024);
    tree.status(100, None, Confirmed, 0);
    tree
}

#[test]
fn a_write_is_processed_first_and_released_with_its_confirmation() {
    let mut tree = tree();
    tree.status(101, Some(100), CreatedBank, 0);
    let step = tree.write(w(101, 1, 7));
    assert!(step.released.is_empty() && step.processed_changed);
    assert_eq!(tree.best_chain(), &[101]);
    assert_eq!(tree.processed().len(), 1);
    assert_eq!(tree.tip(), Some(101));
    let step = tree.status(101, None, Confirmed, 1_200);
    assert_eq!(step.released, vec![(101, vec![w(101, 1, 7)])]);
    assert_eq!(step.confirmed, vec![(101, Some(1_200))]);
    assert!(tree.processed().is_empty() && tree.best_chain().is_empty());
    // A late write of a confirmed slot goes straight through.
    assert_eq!(
        tree.write(w(101, 2, 8)).released,
        vec![(101, vec![w(101, 2, 8)])]
    );
}

#[test]
fn a_dead_slot_leaves_the_processed_view_even_after_completed() {
    let mut tree = tree();
    tree.status(101, Some(100), Completed, 0);
    tree.write(w(101, 1, 7));
    tree.status(102, Some(101), CreatedBank, 0);
    assert_eq!(tree.best_chain(), &[101, 102]);
    let step = tree.status(101, None, Dead, 5);
    assert_eq!(step.abandoned, vec![101, 102]);
    assert_eq!(step.dropped_writes, 1);
    assert!(step.processed_changed && tree.best_chain().is_empty());
    // Its late writes are dropped too.
    assert_eq!(tree.write(w(101, 3, 7)).dropped_writes, 1);
    assert_eq!(tree.tip(), Some(100));
}

#[test]
fn a_confirmed_sibling_abandons_the_other_fork() {
    let mut tree = tree();
    tree.status(101, Some(100), CreatedBank, 0);
    tree.status(102, Some(100), CreatedBank, 0);
    tree.write(w(101, 1, 1));
    tree.write(w(102, 2, 1));
    assert_eq!(tree.best_chain(), &[102]);
    let step = tree.status(101, None, Confirmed, 9);
    assert_eq!(step.abandoned, vec![102]);
    assert_eq!(step.released, vec![(101, vec![w(101, 1, 1)])]);
}

#[test]
fn a_confirmation_implies_its_ancestors_and_children_may_come_first() {
    let mut tree = SlotTree::new(1024);
    // The child's confirmation before anything of its parent.
    tree.write(w(6, 2, 1));
    tree.status(7, Some(6), Confirmed, 0);
    assert!(tree.is_confirmed(6) && tree.is_confirmed(7));
    // The parent's own parent arrives later: 5 is implied too.
    tree.write(w(5, 1, 1));
    let step = tree.status(6, Some(5), Processed, 0);
    assert_eq!(step.released, vec![(5, vec![w(5, 1, 1)])]);
}

#[test]
fn nothing_is_decided_on_a_link_not_yet_known() {
    let mut tree = tree();
    tree.status(102, None, Processed, 0);
    tree.write(w(102, 1, 1));
    assert!(tree.best_chain().is_empty(), "102's ancestry is unknown");
    tree.status(102, Some(101), Completed, 0);
    assert!(tree.best_chain().is_empty(), "nor is 101's");
    tree.status(101, Some(100), CreatedBank, 0);
    assert_eq!(tree.best_chain(), &[101, 102]);
}

#[test]
fn the_bound_evicts_the_oldest_open_slots_until_confirmations_resume() {
    let mut tree: SlotTree<TestWrite> = SlotTree::new(3);
    tree.status(10, None, Confirmed, 0);
    for slot in 11..=15 {
        tree.status(slot, Some(slot - 1), CreatedBank, 0);
    }
    assert_eq!(tree.open_slots(), 3);
    assert!(tree.overflowed());
    assert!(tree.best_chain().is_empty(), "the chain to 10 is broken");
    let step = tree.status(16, Some(15), Confirmed, 0);
    assert!(step.reconcile, "evicted writes may have been confirmed");
    assert!(!tree.overflowed());
}

#[test]
fn bad_links_and_far_slots_are_refused_without_harm() {
    let mut tree = tree();
    let step = tree.status(101, Some(101), CreatedBank, 0);
    assert_eq!(
        step.problem,
        Some(Problem::ParentNotBelow {
            slot: 101,
            parent: 101
        })
    );
    let step = tree.status(101, Some(150), CreatedBank, 0);
    assert_eq!(
        step.problem,
        Some(Problem::ParentNotBelow {
            slot: 101,
            parent: 150
        })
    );
    let step = tree.status(u64::MAX, Some(100), Processed, 0);
    assert_eq!(step.problem, Some(Problem::FarFuture { slot: u64::MAX }));
    assert_eq!(tree.open_slots(), 0);
    assert!(!tree.unsound());
}

/// Sends what contradicts the tree of the test below; says the problem.
type Contradict = Box<dyn Fn(&mut SlotTree<TestWrite>) -> Option<Problem>>;

#[test]
fn contradictions_fall_back_to_the_confirmed_view_and_reconcile() {
    let cases: Vec<(&str, Contradict)> = vec![
        (
            "confirmed after dead",
            Box::new(|t| t.status(101, None, Confirmed, 0).problem),
        ),
        (
            "dead after confirmed",
            Box::new(|t| t.status(100, None, Dead, 0).problem),
        ),
        (
            "a second parent",
            Box::new(|t| t.status(106, Some(105), Processed, 0).problem),
        ),
        (
            "two confirmed forks",
            Box::new(|t| {
                t.status(103, Some(102), Processed, 0);
                t.status(104, Some(100), Confirmed, 0);
                t.status(103, None, Confirmed, 0).problem
            }),
        ),
    ];
    for (name, contradict) in cases {
        let mut tree = tree();
        tree.status(101, Some(100), Dead, 0);
        tree.status(102, Some(101), CreatedBank, 0);
        tree.status(105, None, Processed, 0);
        tree.status(106, Some(100), CreatedBank, 0);
        tree.write(w(106, 1, 1));
        assert_eq!(tree.best_chain(), &[106], "{name}");
        let problem = contradict(&mut tree).unwrap_or_else(|| panic!("{name}: no problem"));
        assert!(problem.contradicts(), "{name}: {problem:?}");
        assert!(tree.unsound() && tree.best_chain().is_empty(), "{name}");
        assert!(tree.processed().is_empty(), "{name}");
        // Sound again with the next confirmation.
        tree.status(200, None, Confirmed, 0);
        assert!(!tree.unsound(), "{name}");
    }
}

#[test]
fn a_reconnect_without_replay_forgets_what_was_open() {
    let mut tree = tree();
    tree.status(101, Some(100), CreatedBank, 0);
    tree.write(w(101, 1, 1));
    assert!(tree.forget_open());
    assert!(tree.best_chain().is_empty() && tree.open_slots() == 0);
    assert!(tree.is_confirmed(100));
}
