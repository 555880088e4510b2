//! The `liquidated` event, inferred (docs/design.md §12): an owner under water
//! before a slot's changes whose position in some pool d lost borrow_principal
//! and whose position in some pool c lost deposit_shares, both new states at
//! that slot. repaid is the drop of borrow_debt in d, seized the drop of
//! deposit_tokens in c, in base units; when several pools qualify, the
//! largest drops by value.
//!
//! A slot's changes may reach the engine in more than one batch (two accounts
//! notified apart), so each owner's newest slot is watched until a newer one
//! comes: the event is told once per slot, in the batch that completes it.
//! Changes at a slot older than the one watched are passed over.

use std::collections::HashMap;

use crate::pubkey::Pubkey;
use crate::wad::{Big, WAD};

/// One position's new state in a batch, as the inference reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PositionChange {
    pub slot: u64,
    pub pool: Pubkey,
    /// borrow_principal fell.
    pub lost_principal: bool,
    /// The drop of borrow_debt in base units (0 when it did not fall), and its value.
    pub debt_drop: u128,
    pub debt_drop_value: Big,
    /// deposit_shares fell.
    pub lost_shares: bool,
    /// The drop of deposit_tokens in base units, and its value.
    pub token_drop: u128,
    pub token_drop_value: Big,
}

/// A liquidation, as inferred.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Liquidation {
    pub slot: u64,
    pub health_factor_before: u128,
    pub health_factor_after: u128,
    pub debt_pool: Pubkey,
    pub repaid: u128,
    pub collateral_pool: Pubkey,
    pub seized: u128,
}

/// The largest drop of one side so far: (value, pool, amount).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Drop {
    value: Big,
    pool: Pubkey,
    amount: u128,
}

impl Drop {
    /// Larger by value; among equal values the lower pool address.
    fn better_than(&self, other: &Drop) -> bool {
        self.value > other.value || (self.value == other.value && self.pool < other.pool)
    }
}

fn keep_larger(best: &mut Option<Drop>, candidate: Drop) {
    if best.is_none_or(|b| candidate.better_than(&b)) {
        *best = Some(candidate);
    }
}

#[derive(Debug, Clone)]
struct SlotWatch {
    slot: u64,
    /// The account health factor before this slot's first change.
    before: u128,
    debt: Option<Drop>,
    collateral: Option<Drop>,
    told: bool,
}

/// Owners' newest slots being watched.
#[derive(Debug, Default)]
pub struct LiquidationWatch {
    owners: HashMap<Pubkey, SlotWatch>,
    newest: u64,
}

/// Watches are let go once this many slots old (about ten minutes of slots),
/// checked when more than `KEEP` owners are watched.
const FORGET_AFTER_SLOTS: u64 = 1_500;
const KEEP: usize = 10_000;

impl LiquidationWatch {
    /// An owner's position changes of one batch, with its account health
    /// factor before and after the batch: the liquidation it completes, if any.
    pub fn observe(
        &mut self,
        owner: Pubkey,
        before: u128,
        after: u128,
        changes: &[PositionChange],
    ) -> Option<Liquidation> {
        let newest = changes.iter().map(|c| c.slot).max()?;
        self.newest = self.newest.max(newest);
        let watch = self.owners.entry(owner).or_insert(SlotWatch {
            slot: newest,
            before,
            debt: None,
            collateral: None,
            told: false,
        });
        if watch.slot < newest {
            *watch = SlotWatch {
                slot: newest,
                before,
                debt: None,
                collateral: None,
                told: false,
            };
        }
        for change in changes.iter().filter(|c| c.slot == watch.slot) {
            if change.lost_principal {
                let drop = Drop {
                    value: change.debt_drop_value,
                    pool: change.pool,
                    amount: change.debt_drop,
                };
                keep_larger(&mut watch.debt, drop);
            }
            if change.lost_shares {
                let drop = Drop {
                    value: change.token_drop_value,
                    pool: change.pool,
                    amount: change.token_drop,
                };
                keep_larger(&mut watch.collateral, drop);
            }
        }
        let told = match (watch.debt, watch.collateral) {
            (Some(debt), Some(collateral)) if watch.before < WAD && !watch.told => {
                watch.told = true;
                Some(Liquidation {
                    slot: watch.slot,
                    health_factor_before: watch.before,
                    health_factor_after: after,
                    debt_pool: debt.pool,
                    repaid: debt.amount,
                    collateral_pool: collateral.pool,
                    seized: collateral.amount,
                })
            }
            _ => None,
        };
        if self.owners.len() > KEEP {
            let horizon = self.newest.saturating_sub(FORGET_AFTER_SLOTS);
            self.owners.retain(|_, w| w.slot >= horizon);
        }
        told
    }

    /// Forgets everything (a new leader starts watching afresh).
    pub fn clear(&mut self) {
        self.owners.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pool(i: u8) -> Pubkey {
        Pubkey::new_from_array([i; 32])
    }

    fn owner(i: u8) -> Pubkey {
        let mut k = [7u8; 32];
        k[0] = i;
        Pubkey::new_from_array(k)
    }

    fn change(slot: u64, p: u8, repaid: u128, seized: u128) -> PositionChange {
        PositionChange {
            slot,
            pool: pool(p),
            lost_principal: repaid > 0,
            debt_drop: repaid,
            debt_drop_value: Big::from(repaid * 3),
            lost_shares: seized > 0,
            token_drop: seized,
            token_drop_value: Big::from(seized * 2),
        }
    }

    #[test]
    fn both_sides_at_one_slot_while_under_water() {
        let mut w = LiquidationWatch::default();
        let o = owner(1);
        let l = w
            .observe(
                o,
                WAD / 2,
                WAD,
                &[change(10, 1, 100, 0), change(10, 2, 0, 50)],
            )
            .expect("a liquidation");
        assert_eq!((l.debt_pool, l.repaid), (pool(1), 100));
        assert_eq!((l.collateral_pool, l.seized), (pool(2), 50));
        assert_eq!(
            (l.health_factor_before, l.health_factor_after, l.slot),
            (WAD / 2, WAD, 10)
        );
        // The same slot again tells nothing more.
        assert_eq!(w.observe(o, WAD, WAD, &[change(10, 1, 5, 5)]), None);
    }

    #[test]
    fn halves_in_two_batches_of_one_slot() {
        let mut w = LiquidationWatch::default();
        let o = owner(1);
        assert_eq!(
            w.observe(o, WAD / 2, WAD / 2, &[change(10, 1, 100, 0)]),
            None
        );
        let l = w
            .observe(o, WAD / 2, 2 * WAD, &[change(10, 2, 0, 40)])
            .unwrap();
        assert_eq!(
            l.health_factor_before,
            WAD / 2,
            "before the slot's first change"
        );
        assert_eq!(l.health_factor_after, 2 * WAD);
    }

    #[test]
    fn not_under_water_or_not_one_slot_is_no_liquidation() {
        let mut w = LiquidationWatch::default();
        // A healthy owner who repays and withdraws.
        assert_eq!(
            w.observe(owner(1), WAD, WAD, &[change(10, 1, 100, 50)]),
            None
        );
        // Halves at two slots.
        let o = owner(2);
        assert_eq!(
            w.observe(o, WAD / 2, WAD / 2, &[change(10, 1, 100, 0)]),
            None
        );
        assert_eq!(
            w.observe(o, WAD / 2, WAD / 2, &[change(11, 2, 0, 50)]),
            None
        );
        // An older slot after a newer one is passed over.
        assert_eq!(
            w.observe(o, WAD / 2, WAD / 2, &[change(10, 2, 0, 50)]),
            None
        );
    }

    #[test]
    fn the_largest_drops_by_value() {
        let mut w = LiquidationWatch::default();
        let l = w
            .observe(
                owner(1),
                0,
                0,
                &[
                    change(5, 1, 100, 0),
                    change(5, 2, 300, 0),
                    change(5, 3, 0, 10),
                    change(5, 4, 0, 90),
                ],
            )
            .unwrap();
        assert_eq!((l.debt_pool, l.collateral_pool), (pool(2), pool(4)));
    }

    // ---- against a brute-force model -------------------------------------------

    type Batch = (u8, u128, u128, Vec<PositionChange>);

    /// From scratch over a prefix of one owner's batches: the newest slot, the
    /// health factor before the first batch that reached it, and its best
    /// drops (every change at that slot counts: none can come after a newer
    /// slot, since it is the newest).
    fn evaluate(batches: &[&Batch]) -> Option<(u64, u128, Option<Drop>, Option<Drop>)> {
        let slot = batches.iter().flat_map(|b| &b.3).map(|c| c.slot).max()?;
        let first = batches
            .iter()
            .find(|b| b.3.iter().any(|c| c.slot == slot))?;
        let at: Vec<&PositionChange> = batches
            .iter()
            .flat_map(|b| &b.3)
            .filter(|c| c.slot == slot)
            .collect();
        let best = |side: fn(&PositionChange) -> Option<Drop>| {
            at.iter()
                .filter_map(|c| side(c))
                .reduce(|a, b| if b.better_than(&a) { b } else { a })
        };
        let debt = best(|c| {
            c.lost_principal.then_some(Drop {
                value: c.debt_drop_value,
                pool: c.pool,
                amount: c.debt_drop,
            })
        });
        let collateral = best(|c| {
            c.lost_shares.then_some(Drop {
                value: c.token_drop_value,
                pool: c.pool,
                amount: c.token_drop,
            })
        });
        Some((slot, first.1, debt, collateral))
    }

    fn model(batches: &[Batch]) -> Vec<(u8, Liquidation)> {
        let mut told: Vec<(u8, Liquidation)> = Vec::new();
        for (i, batch) in batches.iter().enumerate() {
            let mine: Vec<&Batch> = batches[..=i].iter().filter(|b| b.0 == batch.0).collect();
            let Some((slot, before, Some(d), Some(c))) = evaluate(&mine) else {
                continue;
            };
            let already = told.iter().any(|(o, l)| *o == batch.0 && l.slot == slot);
            if before < WAD && !already && !batch.3.is_empty() {
                told.push((
                    batch.0,
                    Liquidation {
                        slot,
                        health_factor_before: before,
                        health_factor_after: batch.2,
                        debt_pool: d.pool,
                        repaid: d.amount,
                        collateral_pool: c.pool,
                        seized: c.amount,
                    },
                ));
            }
        }
        told
    }

    fn a_change() -> impl Strategy<Value = PositionChange> {
        (
            0..4u64,
            0..3u8,
            0..3u128,
            0..3u128,
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(slot, p, repaid, seized, lp, ls)| PositionChange {
                slot,
                pool: pool(p),
                lost_principal: lp,
                debt_drop: repaid,
                debt_drop_value: Big::from(repaid),
                lost_shares: ls,
                token_drop: seized,
                token_drop_value: Big::from(seized),
            })
    }

    fn a_batch() -> impl Strategy<Value = Batch> {
        (
            0..2u8,
            prop_oneof![Just(WAD / 2), Just(WAD), Just(2 * WAD)],
            prop_oneof![Just(WAD / 2), Just(2 * WAD)],
            proptest::collection::vec(a_change(), 0..4),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn matches_the_model(batches in proptest::collection::vec(a_batch(), 0..8)) {
            let mut w = LiquidationWatch::default();
            let mut told = Vec::new();
            for (o, before, after, changes) in &batches {
                if let Some(l) = w.observe(owner(*o), *before, *after, changes) {
                    told.push((*o, l));
                }
            }
            prop_assert_eq!(told, model(&batches));
        }
    }
}
