//! Positions shared with a twin engine (docs/design.md §17): the feed view
//! is given every owner change the pool view is given, so its owners'
//! positions are the pool view's almost always. An owner whose positions
//! equal its twin's holds the twin's list instead of a copy of it; a write
//! to either copies the list first (`OwnerSlab::positions_mut`), so neither
//! ever sees the other's change. Sharing swaps equal for equal: nothing an
//! engine answers depends on it, only the memory a second view costs.

use std::sync::Arc;

use super::owners::Owner;
use super::pools::PoolTable;
use super::{Engine, PoolId};
use lendex_domain::liquidation::Quote;

/// What a re-score may take from a twin that applied the same changes
/// first: an owner's health factor and quote depend only on its positions
/// and, for each, its pool's address, pricing and terms. Where the owner
/// holds the twin's very list (`share_positions`) and every pool it names
/// is the twin's alike, the twin's values are the ones this engine would
/// compute; the feed view so re-scores only what its feeds moved.
pub(crate) struct TwinScores<'a> {
    twin: &'a Engine,
    /// By pool id: the twin holds the same pool under that id, alike.
    alike: Vec<bool>,
}

impl<'a> TwinScores<'a> {
    /// After every pool of a change is set, before any member is re-scored.
    pub(crate) fn new(pools: &PoolTable, twin: &'a Engine) -> Self {
        let alike = (0..pools.id_bound())
            .map(|id| {
                let (Some(mine), Some(theirs)) =
                    (pools.get(id as PoolId), twin.pools.get(id as PoolId))
                else {
                    return false;
                };
                let (a, b) = (&mine.state, &theirs.state);
                a.address == b.address && a.pricing == b.pricing && a.terms == b.terms
            })
            .collect();
        TwinScores { twin, alike }
    }

    /// The twin's health factor and quote for `owner`, when they are what
    /// this engine would compute.
    pub(crate) fn scored(&self, owner: &Owner) -> Option<(u128, Option<Box<Quote>>)> {
        let theirs = self.twin.owners.by_key(&owner.key)?;
        if !Arc::ptr_eq(&theirs.positions, &owner.positions) {
            return None;
        }
        let alike = |id: PoolId| self.alike.get(id as usize).copied().unwrap_or(false);
        if !owner.positions.iter().all(|p| alike(p.pool)) {
            return None;
        }
        Some((theirs.hf, theirs.quote.clone()))
    }
}

impl Engine {
    /// From now on the slots whose positions are written are noted, for
    /// `share_positions` to look at (the engine that shares; its twin needs
    /// nothing).
    pub fn note_position_writes(&mut self) {
        self.owners.note_writes();
    }

    /// Each owner whose positions were written since the last call, and
    /// equal `twin`'s, holds the twin's list from now on. Returns how many
    /// were shared.
    pub fn share_positions(&mut self, twin: &Engine) -> usize {
        let mut written = self.owners.take_written();
        written.sort_unstable();
        written.dedup();
        let mut shared = 0;
        for slot in written {
            if !self.owners.is_resident(slot) {
                continue;
            }
            let mine = self.owners.get(slot);
            let Some(theirs) = twin.owners.by_key(&mine.key) else {
                continue;
            };
            if Arc::ptr_eq(&mine.positions, &theirs.positions) || mine.positions != theirs.positions
            {
                continue;
            }
            self.owners.get_mut(slot).positions = Arc::clone(&theirs.positions);
            shared += 1;
        }
        shared
    }

    /// How many resident owners hold a list shared with another engine
    /// (for tests, here and in the views').
    #[cfg(any(test, feature = "sample"))]
    pub fn shared_position_lists(&self) -> usize {
        (self.owners.resident())
            .filter(|o| Arc::strong_count(&o.positions) > 1)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use crate::sample::{OWNERS, POOLS, owner_key, pool_key, pool_state, position, position_key};
    use crate::{Change, Engine, PositionState};

    /// Which engines a change is given to: both, or one alone (a write
    /// only one of them sees must never show in the other).
    #[derive(Debug, Clone, Copy)]
    enum To {
        Both,
        Twin,
        Sharer,
    }

    fn to() -> impl Strategy<Value = To> {
        prop_oneof![6 => Just(To::Both), 1 => Just(To::Twin), 1 => Just(To::Sharer)]
    }

    fn change(slot: u64) -> impl Strategy<Value = Change> {
        let owner = 0..4u8;
        let pool = 0..POOLS;
        prop_oneof![
            (owner.clone(), pool.clone(), 0..3_000u64, 0..3_000u64).prop_map(
                move |(o, p, deposit, borrow)| Change::Position {
                    owner: owner_key(o),
                    position: PositionState {
                        slot,
                        ..position(o, p, deposit, borrow, slot as i64)
                    },
                    row_health_factor: 0,
                }
            ),
            (owner.clone(), pool.clone()).prop_map(move |(o, p)| Change::Removed {
                owner: owner_key(o),
                position: position_key(o, p),
                slot,
            }),
            (owner, pool.clone(), 0..100i64).prop_map(move |(o, p, t)| Change::Touched {
                owner: owner_key(o),
                position: position_key(o, p),
                slot,
                synced_us: t,
            }),
            (pool.clone(), 0..100i64).prop_map(move |(p, t)| Change::PoolTouched {
                pool: pool_key(p),
                slot,
                synced_us: t,
            }),
            (pool, 1..5_000_000i64).prop_map(move |(p, price)| {
                let mut state = pool_state(p, Some(price));
                state.slot = slot;
                Change::Pool(state)
            }),
        ]
    }

    fn engines() -> [Engine; 4] {
        let mut all = [0; 4].map(|_| Engine::new(usize::MAX));
        for engine in &mut all {
            for i in 0..POOLS {
                engine.upsert_pool(pool_state(i, Some(1_000_000)));
            }
        }
        all[1].note_position_writes();
        all
    }

    /// Every owner's positions as given, and its health factor.
    type Held = Vec<(Vec<PositionState>, Option<u128>)>;

    fn held(engine: &Engine) -> Held {
        (0..OWNERS)
            .map(|o| {
                let key = owner_key(o);
                let positions = engine.peek(&key).map(|v| {
                    (v.positions.iter())
                        .map(|(p, pool)| p.state(pool.state.address))
                        .collect()
                });
                (positions.unwrap_or_default(), engine.health_factor(&key))
            })
            .collect()
    }

    proptest! {
        /// A sharer and its twin answer exactly as two engines that share
        /// nothing and compute every score, given the same changes,
        /// one-sided ones included (pools priced apart, owners moved in
        /// one); with no one-sided change, every owner ends up shared.
        #[test]
        fn sharing_changes_no_answer(
            ticks in proptest::collection::vec(
                (1..60u64).prop_flat_map(|slot| (to(), proptest::collection::vec(change(slot), 1..4))),
                1..30,
            ),
        ) {
            let [mut twin, mut sharer, mut plain_twin, mut plain_sharer] = engines();
            let mut one_sided = false;
            for (to, changes) in ticks {
                if !matches!(to, To::Sharer) {
                    twin.apply(changes.clone());
                    plain_twin.apply(changes.clone());
                }
                if !matches!(to, To::Twin) {
                    // Beside the twin even when it did not take the change:
                    // what it holds otherwise must not be taken.
                    sharer.apply_beside(changes.clone(), &twin);
                    plain_sharer.apply(changes);
                }
                one_sided |= !matches!(to, To::Both);
                sharer.share_positions(&twin);
                prop_assert_eq!(held(&sharer), held(&plain_sharer));
                prop_assert_eq!(held(&twin), held(&plain_twin));
            }
            if !one_sided {
                prop_assert_eq!(sharer.shared_position_lists(), sharer.owner_count());
            }
        }
    }

    #[test]
    fn a_write_to_one_copies_the_list_and_the_next_share_joins_them_again() {
        let [mut twin, mut sharer, ..] = engines();
        let load: Vec<Change> = (0..3u8)
            .flat_map(|o| {
                (0..2).map(move |p| Change::Position {
                    owner: owner_key(o),
                    position: position(o, p, 1_000, 100, 1),
                    row_health_factor: 0,
                })
            })
            .collect();
        twin.apply(load.clone());
        sharer.apply(load);
        assert_eq!(sharer.shared_position_lists(), 0);
        assert_eq!(sharer.share_positions(&twin), 3);
        assert_eq!(twin.shared_position_lists(), 3);
        let touch = Change::Touched {
            owner: owner_key(1),
            position: position_key(1, 0),
            slot: 9,
            synced_us: 77,
        };
        twin.apply(vec![touch.clone()]);
        let synced = |e: &Engine| e.peek(&owner_key(1)).map(|v| v.positions[0].0.synced_us);
        assert_eq!((synced(&twin), synced(&sharer)), (Some(77), Some(1)));
        assert_eq!(sharer.shared_position_lists(), 2);
        sharer.apply(vec![touch]);
        assert_eq!(sharer.share_positions(&twin), 1);
        assert_eq!(sharer.shared_position_lists(), 3);
    }
}
