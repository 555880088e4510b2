//! Which events one change makes for a webhook (docs/design.md §18): the
//! owners whose account health factor it moved, each judged once from its
//! value before the change to its value after, against the webhook's line
//! and filter. Events come sorted by owner, so every replica splits a large
//! change into the same parts.

use std::collections::{BTreeMap, HashSet};

use super::EventType;
use super::crossing::crossing;
use crate::pubkey::Pubkey;

/// A webhook as judging needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub id: String,
    pub below: u128,
    /// None: every owner.
    pub owners: Option<HashSet<Pubkey>>,
    /// None: any pool; else an owner must hold a position in one of them.
    pub pools: Option<HashSet<Pubkey>>,
    /// The change log's tick at its creation: it judges later changes only.
    pub created_tick: u64,
}

/// An owner's value across one change: before it (none: not held) and after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moved {
    pub owner: Pubkey,
    pub before: Option<u128>,
    pub after: u128,
}

/// One change's moves, in the order applied (an owner may move more than
/// once), as one move per owner: its first value before, its last after;
/// sorted by owner, those that end where they began left out.
pub fn net(moves: impl IntoIterator<Item = Moved>) -> Vec<Moved> {
    let mut by_owner: BTreeMap<Pubkey, Moved> = BTreeMap::new();
    for m in moves {
        by_owner
            .entry(m.owner)
            .and_modify(|held| held.after = m.after)
            .or_insert(m);
    }
    by_owner
        .into_values()
        .filter(|m| m.before != Some(m.after))
        .collect()
}

/// A crossing of a webhook's line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crossed {
    pub kind: EventType,
    pub owner: Pubkey,
    pub health_factor: u128,
}

/// The crossings change `tick`'s net moves (`net`) make for `filter`;
/// `holds` says whether an owner holds a position in one of a set of pools.
pub fn crossings(
    filter: &Filter,
    tick: u64,
    moves: &[Moved],
    holds: impl Fn(&Pubkey, &HashSet<Pubkey>) -> bool,
) -> Vec<Crossed> {
    if tick <= filter.created_tick {
        return Vec::new();
    }
    moves
        .iter()
        .filter(|m| filter.owners.as_ref().is_none_or(|o| o.contains(&m.owner)))
        .filter_map(|m| {
            let kind = crossing(m.before, m.after, filter.below)?;
            Some(Crossed {
                kind,
                owner: m.owner,
                health_factor: m.after,
            })
        })
        .filter(|c| filter.pools.as_ref().is_none_or(|p| holds(&c.owner, p)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wad::WAD;
    use proptest::prelude::*;

    fn key(n: u8) -> Pubkey {
        Pubkey::new_from_array([n; 32])
    }

    fn moved(n: u8, before: Option<u128>, after: u128) -> Moved {
        Moved {
            owner: key(n),
            before,
            after,
        }
    }

    fn filter(below: u128) -> Filter {
        Filter {
            id: "wh_1".into(),
            below,
            owners: None,
            pools: None,
            created_tick: 10,
        }
    }

    #[test]
    fn an_owner_moved_twice_is_judged_from_first_to_last() {
        let moves = net([
            moved(2, Some(2 * WAD), WAD / 2),
            moved(1, Some(WAD / 2), 2 * WAD),
            moved(2, Some(WAD / 2), 3 * WAD), // under and back: no crossing
            moved(3, Some(WAD), WAD / 2),
            moved(3, Some(WAD / 2), WAD), // back where it began: no move
        ]);
        assert_eq!(
            moves,
            vec![
                moved(1, Some(WAD / 2), 2 * WAD),
                moved(2, Some(2 * WAD), 3 * WAD)
            ]
        );
        let got = crossings(&filter(WAD), 11, &moves, |_, _| true);
        assert_eq!(
            got,
            vec![Crossed {
                kind: EventType::Recovered,
                owner: key(1),
                health_factor: 2 * WAD
            }]
        );
    }

    #[test]
    fn the_filter_and_the_creation_tick_hold() {
        let moves = net([
            moved(1, Some(2 * WAD), WAD / 2),
            moved(2, Some(2 * WAD), WAD / 2),
            moved(3, Some(2 * WAD), WAD / 2),
        ]);
        let mut f = filter(WAD);
        assert!(
            crossings(&f, 10, &moves, |_, _| true).is_empty(),
            "not after creation"
        );
        f.owners = Some([key(1), key(2)].into());
        f.pools = Some([key(9)].into());
        let owners: Vec<Pubkey> = crossings(&f, 11, &moves, |o, _| *o == key(2))
            .iter()
            .map(|c| c.owner)
            .collect();
        assert_eq!(owners, vec![key(2)]);
    }

    proptest! {
        /// Against a model: the crossings are exactly the owners whose
        /// first value and last value lie on two sides of the line (a new
        /// owner counted as above it), sorted by owner.
        #[test]
        fn crossings_match_a_model(
            raw in proptest::collection::vec((0u8..6, proptest::option::of(0u128..4), 0u128..4), 0..30),
            line in 1u128..4,
        ) {
            let moves: Vec<Moved> = raw.iter().map(|(o, b, a)| moved(*o, b.map(|b| b * WAD / 2), a * WAD / 2)).collect();
            let below = line * WAD / 2;
            let got = crossings(&filter(below), 11, &net(moves.clone()), |_, _| true);
            let mut want = Vec::new();
            for owner in 0u8..6 {
                let mine: Vec<&Moved> = moves.iter().filter(|m| m.owner == key(owner)).collect();
                let (Some(first), Some(last)) = (mine.first(), mine.last()) else { continue };
                let was = first.before.is_some_and(|b| b < below);
                let now = last.after < below;
                if first.before == Some(last.after) || was == now {
                    continue;
                }
                let kind = if now { EventType::Below } else { EventType::Recovered };
                want.push(Crossed { kind, owner: key(owner), health_factor: last.after });
            }
            prop_assert_eq!(got, want);
        }
    }
}
