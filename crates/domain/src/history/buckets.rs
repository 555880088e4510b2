//! Points summed into buckets of a fixed width (docs/design.md §12): one bucket
//! per interval that holds points, empty intervals left out. A bucket covers
//! its whole interval, aligned on the epoch (a day's bucket starts at UTC
//! midnight).

use ruint::aliases::U256;

use super::{Cause, bucket_start};
use crate::wad::WAD;

/// One recorded health point of an owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthPoint {
    /// Microseconds since the Unix epoch.
    pub at_us: i64,
    pub slot: u64,
    pub health_factor: u128,
    pub collateral: U256,
    pub debt: U256,
    pub cause: Cause,
}

/// The points of one interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthBucket {
    pub start_us: i64,
    pub count: u64,
    pub first: u128,
    pub min: u128,
    pub max: u128,
    pub last: u128,
    /// The last point's values.
    pub collateral: U256,
    pub debt: U256,
    /// Some point of the interval was below 1 WAD.
    pub under_water: bool,
}

/// `points` (oldest first) in buckets of `width_us`, oldest first.
pub fn health_buckets(points: &[HealthPoint], width_us: i64) -> Vec<HealthBucket> {
    let mut out: Vec<HealthBucket> = Vec::new();
    for p in points {
        let start = bucket_start(p.at_us, width_us);
        match out.last_mut() {
            Some(b) if b.start_us == start => {
                b.count += 1;
                b.min = b.min.min(p.health_factor);
                b.max = b.max.max(p.health_factor);
                b.last = p.health_factor;
                b.collateral = p.collateral;
                b.debt = p.debt;
                b.under_water |= p.health_factor < WAD;
            }
            _ => out.push(HealthBucket {
                start_us: start,
                count: 1,
                first: p.health_factor,
                min: p.health_factor,
                max: p.health_factor,
                last: p.health_factor,
                collateral: p.collateral,
                debt: p.debt,
                under_water: p.health_factor < WAD,
            }),
        }
    }
    out
}

/// One sample of the market (docs/design.md §12), at current prices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarketPoint {
    pub at_us: i64,
    /// Owners with at least one priced position.
    pub owners: u64,
    pub under_water: u64,
    /// At or above 1 WAD and below 1.1 WAD.
    pub at_risk: u64,
    pub debt_under_water: U256,
    pub bad_debt: U256,
    /// Every pool's deposits and borrows at its price; None in samples
    /// recorded before the market recorded them.
    pub deposits: Option<U256>,
    pub borrows: Option<U256>,
}

/// The samples of one interval: their count, the last one's values, and the
/// most owners under water at any sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarketBucket {
    pub start_us: i64,
    pub count: u64,
    pub last: MarketPoint,
    pub under_water_max: u64,
}

impl MarketBucket {
    /// A bucket of one sample.
    pub fn of(point: MarketPoint, width_us: i64) -> MarketBucket {
        MarketBucket {
            start_us: bucket_start(point.at_us, width_us),
            count: 1,
            last: point,
            under_water_max: point.under_water,
        }
    }

    /// This bucket followed by `later` samples of the same interval (what a
    /// stored rollup and a newer partial of it make together).
    pub fn then(self, later: MarketBucket) -> MarketBucket {
        debug_assert_eq!(self.start_us, later.start_us);
        MarketBucket {
            start_us: self.start_us,
            count: self.count + later.count,
            last: later.last,
            under_water_max: self.under_water_max.max(later.under_water_max),
        }
    }
}

/// `points` (oldest first) in buckets of `width_us`, oldest first.
pub fn market_buckets(points: &[MarketPoint], width_us: i64) -> Vec<MarketBucket> {
    let mut out: Vec<MarketBucket> = Vec::new();
    for p in points {
        let bucket = MarketBucket::of(*p, width_us);
        match out.last_mut() {
            Some(b) if b.start_us == bucket.start_us => *b = b.then(bucket),
            _ => out.push(bucket),
        }
    }
    out
}

/// How a bucketed range [from, to) is read: the intervals wholly inside it
/// from the stored rollups (`whole`), and an interval cut by `from` (`head`)
/// or by `to` (`tail`) from its samples inside the range only, so that no
/// bucket holds a sample outside [from, to). Each part is a half-open range
/// of microseconds; `whole` is aligned to `width_us`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RangeParts {
    pub head: Option<(i64, i64)>,
    pub whole: Option<(i64, i64)>,
    pub tail: Option<(i64, i64)>,
}

/// Splits [from_us, to_us) for buckets of `width_us` (see [`RangeParts`]).
pub fn range_parts(from_us: i64, to_us: i64, width_us: i64) -> RangeParts {
    if from_us >= to_us || width_us <= 0 {
        return RangeParts::default();
    }
    let first_whole = bucket_start(from_us, width_us);
    let whole_from = if first_whole == from_us {
        from_us
    } else {
        first_whole.saturating_add(width_us)
    };
    let whole_to = bucket_start(to_us, width_us);
    let head_end = whole_from.min(to_us);
    let tail_start = whole_to.max(head_end);
    let part = |a: i64, b: i64| (a < b).then_some((a, b));
    RangeParts {
        head: part(from_us, head_end),
        whole: part(whole_from, whole_to),
        tail: part(tail_start, to_us),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    const MIN: i64 = 60_000_000;

    fn point(at_us: i64, hf: u128) -> HealthPoint {
        HealthPoint {
            at_us,
            slot: at_us as u64,
            health_factor: hf,
            collateral: U256::from(hf / 2),
            debt: U256::from(at_us as u64),
            cause: Cause::Price,
        }
    }

    #[test]
    fn a_worked_example() {
        let points = [
            point(0, 2 * WAD),
            point(10, WAD / 2),
            point(MIN - 1, 3 * WAD),
            point(5 * MIN, WAD),
        ];
        let b = health_buckets(&points, MIN);
        assert_eq!(b.len(), 2, "the empty minutes are left out");
        assert_eq!((b[0].start_us, b[0].count), (0, 3));
        assert_eq!(
            (b[0].first, b[0].min, b[0].max, b[0].last),
            (2 * WAD, WAD / 2, 3 * WAD, 3 * WAD)
        );
        assert!(b[0].under_water);
        assert_eq!(
            b[0].debt,
            U256::from((MIN - 1) as u64),
            "the last point's values"
        );
        assert_eq!(
            (b[1].start_us, b[1].count, b[1].under_water),
            (5 * MIN, 1, false)
        );
    }

    #[test]
    fn a_range_cut_inside_intervals_reads_its_edges_from_samples() {
        // 00:00:30 to 00:03:20 in minutes: 00:00:30-00:01, 00:01-00:03, 00:03-00:03:20.
        let s = 1_000_000;
        assert_eq!(
            range_parts(30 * s, 200 * s, MIN),
            RangeParts {
                head: Some((30 * s, MIN)),
                whole: Some((MIN, 3 * MIN)),
                tail: Some((3 * MIN, 200 * s)),
            }
        );
        // Aligned ends: all whole.
        assert_eq!(
            range_parts(MIN, 4 * MIN, MIN),
            RangeParts {
                head: None,
                whole: Some((MIN, 4 * MIN)),
                tail: None,
            }
        );
        // Inside one interval: one head, nothing else.
        assert_eq!(
            range_parts(10 * s, 20 * s, MIN),
            RangeParts {
                head: Some((10 * s, 20 * s)),
                whole: None,
                tail: None,
            }
        );
        assert_eq!(range_parts(5, 5, MIN), RangeParts::default());
    }

    proptest! {
        #[test]
        fn health_buckets_match_a_grouping_by_interval(
            mut ats in proptest::collection::vec(-3 * MIN..30 * MIN, 0..60),
            hfs in proptest::collection::vec(0..3 * WAD, 60),
            width in prop_oneof![Just(MIN), Just(5 * MIN), Just(60 * MIN)],
        ) {
            ats.sort_unstable();
            let points: Vec<HealthPoint> = ats.iter().zip(&hfs).map(|(at, hf)| point(*at, *hf)).collect();
            let mut groups: BTreeMap<i64, Vec<&HealthPoint>> = BTreeMap::new();
            for p in &points {
                groups.entry(p.at_us.div_euclid(width) * width).or_default().push(p);
            }
            let expected: Vec<HealthBucket> = groups.into_iter().map(|(start, ps)| HealthBucket {
                start_us: start,
                count: ps.len() as u64,
                first: ps[0].health_factor,
                min: ps.iter().map(|p| p.health_factor).min().unwrap(),
                max: ps.iter().map(|p| p.health_factor).max().unwrap(),
                last: ps[ps.len() - 1].health_factor,
                collateral: ps[ps.len() - 1].collateral,
                debt: ps[ps.len() - 1].debt,
                under_water: ps.iter().any(|p| p.health_factor < WAD),
            }).collect();
            prop_assert_eq!(health_buckets(&points, width), expected);
        }

        #[test]
        fn range_parts_tile_the_range_and_only_whole_is_read_whole(
            from in -10 * MIN..10 * MIN,
            len in 1i64..20 * MIN,
            width in prop_oneof![Just(MIN), Just(5 * MIN), Just(60 * MIN)],
        ) {
            let to = from + len;
            let p = range_parts(from, to, width);
            let parts: Vec<(i64, i64)> = [p.head, p.whole, p.tail].into_iter().flatten().collect();
            prop_assert_eq!(parts.first().unwrap().0, from);
            prop_assert_eq!(parts.last().unwrap().1, to);
            for pair in parts.windows(2) {
                prop_assert_eq!(pair[0].1, pair[1].0);
            }
            if let Some((a, b)) = p.whole {
                prop_assert_eq!(a.rem_euclid(width), 0);
                prop_assert_eq!(b.rem_euclid(width), 0);
            }
            // An edge part lies within one interval.
            for (a, b) in [p.head, p.tail].into_iter().flatten() {
                prop_assert_eq!(a.div_euclid(width), (b - 1).div_euclid(width));
            }
        }

        #[test]
        fn market_partials_merge_to_the_whole(
            mut ats in proptest::collection::vec(0..20 * MIN, 1..40),
            under in proptest::collection::vec(0..50u64, 40),
            cut in 0usize..40,
        ) {
            ats.sort_unstable();
            let points: Vec<MarketPoint> = ats.iter().zip(&under).map(|(at, u)| MarketPoint {
                at_us: *at, owners: 100, under_water: *u, at_risk: 3,
                debt_under_water: U256::from(*u), bad_debt: U256::ZERO,
                deposits: Some(U256::from(*at as u64)), borrows: None,
            }).collect();
            let whole = market_buckets(&points, 5 * MIN);
            // Stored rollups of the first samples, merged with partials of the rest.
            let cut = cut.min(points.len());
            let mut merged: BTreeMap<i64, MarketBucket> = BTreeMap::new();
            for part in [&points[..cut], &points[cut..]] {
                for b in market_buckets(part, 5 * MIN) {
                    merged.entry(b.start_us).and_modify(|s| *s = s.then(b)).or_insert(b);
                }
            }
            prop_assert_eq!(merged.into_values().collect::<Vec<_>>(), whole);
        }
    }
}
