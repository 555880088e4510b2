//! When an owner's health is recorded (docs/design.md §12): a point whenever the
//! account health factor differs from the owner's last recorded point and
//! (a) the owner has no point yet, (b) its positions changed, (c) the value is
//! in another band than the last point's, or (d) it moved by at least 1%.
//! Every crossing of 1 WAD is a change of band, so it is always recorded, and
//! the `under`, `recovered` and `bad_debt` events are judged against the last
//! recorded point too: a leader that takes over from that point loses none.

use super::EventKind;
use crate::wad::WAD;

/// Where the bands are cut: 1.0, 1.05, 1.1, 1.25, 1.5 and 2.0 WAD.
pub const BAND_CUTS: [u128; 6] = [
    WAD,
    105 * WAD / 100,
    110 * WAD / 100,
    125 * WAD / 100,
    150 * WAD / 100,
    2 * WAD,
];

/// The band of a health factor: how many cuts are at or below it.
pub fn band(hf: u128) -> usize {
    BAND_CUTS.partition_point(|cut| *cut <= hf)
}

/// abs(new - last) x 100 >= last, exactly (a product past u128 is surely past `last`).
pub fn moved_a_percent(last: u128, new: u128) -> bool {
    last.abs_diff(new)
        .checked_mul(100)
        .is_none_or(|d| d >= last)
}

/// What the rule remembers of an owner's last recorded point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Baseline {
    pub health_factor: u128,
    /// Its collateral value was 0 while its debt value was above 0.
    pub bad_debt: bool,
}

impl Baseline {
    /// The baseline a point of these values leaves.
    pub fn of(health_factor: u128, collateral_is_zero: bool, debt_is_zero: bool) -> Baseline {
        Baseline {
            health_factor,
            bad_debt: collateral_is_zero && !debt_is_zero,
        }
    }
}

/// Whether a health factor of `hf` is recorded after a last point of `last`.
pub fn qualifies(last: Option<u128>, hf: u128, positions_changed: bool) -> bool {
    let Some(last) = last else {
        return true;
    };
    hf != last && (positions_changed || band(hf) != band(last) || moved_a_percent(last, hf))
}

/// The events a recorded point `now` brings after the last point `last`
/// (none after no point: nothing "went" anywhere).
pub fn point_events(last: Option<Baseline>, now: Baseline) -> impl Iterator<Item = EventKind> {
    let crossing = last.and_then(|last| {
        let (was, is) = (last.health_factor < WAD, now.health_factor < WAD);
        match (was, is) {
            (false, true) => Some(EventKind::Under),
            (true, false) => Some(EventKind::Recovered),
            _ => None,
        }
    });
    let bad_debt = last
        .filter(|last| !last.bad_debt && now.bad_debt)
        .map(|_| EventKind::BadDebt);
    crossing.into_iter().chain(bad_debt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NO_DEBT: u128 = u128::MAX;

    #[test]
    fn bands_are_cut_where_decided() {
        assert_eq!(band(0), 0);
        assert_eq!(band(WAD - 1), 0);
        assert_eq!(band(WAD), 1);
        assert_eq!(band(105 * WAD / 100 - 1), 1);
        assert_eq!(band(105 * WAD / 100), 2);
        assert_eq!(band(2 * WAD - 1), 5);
        assert_eq!(band(2 * WAD), 6);
        assert_eq!(band(NO_DEBT), 6);
    }

    #[test]
    fn worked_examples() {
        assert!(qualifies(None, 5 * WAD, false), "first point");
        assert!(!qualifies(Some(5 * WAD), 5 * WAD, true), "unchanged value");
        assert!(
            qualifies(Some(5 * WAD), 5 * WAD + 1, true),
            "positions changed"
        );
        // 3.0 -> 3.02 is under 1% within one band; 3.0 -> 3.03 is 1%.
        assert!(!qualifies(Some(3 * WAD), 302 * WAD / 100, false));
        assert!(qualifies(Some(3 * WAD), 303 * WAD / 100, false));
        // A hair across 1.0 is a band change.
        assert!(qualifies(Some(WAD), WAD - 1, false));
        assert!(qualifies(Some(WAD - 1), WAD, false));
        // No debt to some debt, and back.
        assert!(qualifies(Some(NO_DEBT), 3 * WAD, false));
        assert!(qualifies(Some(3 * WAD), NO_DEBT, false));
        // From 0, any other value is a move of at least 1%.
        assert!(qualifies(Some(0), 1, false));
    }

    #[test]
    fn events_against_the_last_point() {
        let b = |hf, bad| Baseline {
            health_factor: hf,
            bad_debt: bad,
        };
        let events = |last, now| point_events(last, now).collect::<Vec<_>>();
        assert_eq!(events(None, b(WAD / 2, true)), vec![]);
        assert_eq!(
            events(Some(b(WAD, false)), b(WAD - 1, false)),
            vec![EventKind::Under]
        );
        assert_eq!(
            events(Some(b(WAD - 1, false)), b(WAD, false)),
            vec![EventKind::Recovered]
        );
        assert_eq!(
            events(Some(b(WAD / 2, false)), b(0, true)),
            vec![EventKind::BadDebt]
        );
        assert_eq!(
            events(Some(b(2 * WAD, false)), b(0, true)),
            vec![EventKind::Under, EventKind::BadDebt]
        );
        assert_eq!(events(Some(b(0, true)), b(0, true)), vec![]);
        assert_eq!(Baseline::of(0, true, false), b(0, true));
        assert_eq!(Baseline::of(NO_DEBT, true, true), b(NO_DEBT, false));
    }

    /// The band by counting cuts one by one.
    fn brute_band(hf: u128) -> usize {
        BAND_CUTS.iter().filter(|cut| hf >= **cut).count()
    }

    fn value() -> impl Strategy<Value = u128> {
        prop_oneof![
            Just(0u128),
            Just(NO_DEBT),
            (0..=3u128).prop_map(|k| WAD * k),
            0..3 * WAD,
            any::<u128>(),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn the_rule_matches_its_definition(last in proptest::option::of(value()), hf in value(), changed in any::<bool>()) {
            let expected = match last {
                None => true,
                Some(last) => {
                    let diff = num_bigint::BigUint::from(last.abs_diff(hf));
                    let moved = diff * 100u8 >= num_bigint::BigUint::from(last);
                    hf != last && (changed || brute_band(hf) != brute_band(last) || moved)
                }
            };
            prop_assert_eq!(qualifies(last, hf, changed), expected);
        }

        #[test]
        fn every_crossing_of_one_is_recorded_and_named(last in value(), hf in value()) {
            if (last < WAD) != (hf < WAD) {
                prop_assert!(qualifies(Some(last), hf, false));
                let was = Baseline { health_factor: last, bad_debt: false };
                let now = Baseline { health_factor: hf, bad_debt: false };
                let kinds: Vec<_> = point_events(Some(was), now).collect();
                prop_assert_eq!(kinds.len(), 1);
            }
        }
    }
}
