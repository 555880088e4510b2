//! History's recorder against a brute-force model: after every change, each
//! owner's value recomputed from scratch is held against the model's own last
//! recorded point with the rule; the engine must have recorded exactly the
//! points (values, collateral, debt) and events the model records. Eviction
//! and parked baselines, takeover and the liquidated inference have their
//! own cases below.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use ruint::aliases::U256;

use super::history::{Baselines, PointRecord, Record};
use super::sample::{owner_key, pool_key};
use super::tests::{Model, Op, apply, fresh, op};
use super::*;
use lendex_domain::history::rule::{Baseline, point_events, qualifies};
use lendex_domain::history::{Cause, EventKind};
use lendex_domain::risk::{Sums, position_values};
use lendex_domain::wad::{Big, PositionAmounts};

/// The model's sums of an owner's positions: C, Cw, D.
fn sums(model: &Model, positions: &[PositionState]) -> Sums {
    let mut sums = Sums::default();
    for p in positions {
        let pool = model.pools.iter().find(|x| x.address == p.pool).unwrap();
        let price = pool.pricing.price().map(|(p, _)| p as u128);
        sums.add(position_values(
            &pool.pricing,
            &p.amounts,
            price,
            pool.pricing.oracle_expo.unwrap_or(0),
        ));
    }
    sums
}

fn rows(positions: Option<&Vec<PositionState>>) -> BTreeSet<(Pubkey, u64, u64, u128)> {
    let row = |p: &PositionState| -> (Pubkey, u64, u64, u128) {
        let PositionAmounts {
            deposit_shares,
            borrow_principal,
            borrow_idx_snap,
        } = p.amounts;
        (p.address, deposit_shares, borrow_principal, borrow_idx_snap)
    };
    positions
        .map(|ps| ps.iter().map(row).collect())
        .unwrap_or_default()
}

type Point = (Pubkey, u128, U256, U256);

fn points_of(records: &[Record]) -> Vec<Point> {
    let mut out: Vec<Point> = records
        .iter()
        .filter_map(|r| match r {
            Record::Point(p) => Some((p.owner, p.health_factor, p.collateral, p.debt)),
            _ => None,
        })
        .collect();
    out.sort();
    out
}

fn events_of(records: &[Record]) -> Vec<(Pubkey, &'static str, u128, u128)> {
    let mut out: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::Event(e) if e.kind != EventKind::Liquidated => Some((
                e.owner,
                e.kind.as_str(),
                e.health_factor_before,
                e.health_factor_after,
            )),
            _ => None,
        })
        .collect();
    out.sort();
    out
}

fn no_past() -> Baselines {
    Baselines {
        owners: Vec::new(),
        oracles: Vec::new(),
        feed_oracles: Vec::new(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn records_exactly_what_the_rule_picks(ops in proptest::collection::vec(op(), 1..60)) {
        let (mut engine, mut model) = fresh(1_000);
        engine.start_history(no_past());
        let first = engine.take_history();
        prop_assert_eq!(first.len(), POOLS_AND_NO_OWNER, "a price row per pool, no owner yet");
        let mut last: BTreeMap<Pubkey, Baseline> = BTreeMap::new();
        for (t, op) in ops.iter().enumerate() {
            let before = model.owners.clone();
            apply(&mut engine, &mut model, op, t as i64);
            let records = engine.take_history();
            let mut points = Vec::new();
            let mut events = Vec::new();
            let keys: BTreeSet<Pubkey> = before.keys().chain(model.owners.keys()).copied().collect();
            for key in keys {
                let after = model.owners.get(&key);
                let changed = !matches!(op, Op::Reload) && rows(before.get(&key)) != rows(after);
                let (hf, s) = match after {
                    Some(ps) => (model.hf(ps), sums(&model, ps)),
                    None => (u128::MAX, Sums::default()),
                };
                let was = last.get(&key).copied();
                if !qualifies(was.map(|b| b.health_factor), hf, changed) {
                    continue;
                }
                let now = Baseline::of(hf, s.collateral == Big::ZERO, s.debt == Big::ZERO);
                for kind in point_events(was, now) {
                    events.push((key, kind.as_str(), was.unwrap().health_factor, hf));
                }
                points.push((key, hf, s.collateral.saturating_to(), s.debt.saturating_to()));
                last.insert(key, now);
            }
            points.sort();
            events.sort();
            prop_assert_eq!(points_of(&records), points, "op {} {:?}", t, op);
            prop_assert_eq!(events_of(&records), events, "op {} {:?}", t, op);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// The market sample read from the owners under water is the book's, and
    /// its deposits and borrows are the sums of the pools' status.
    #[test]
    fn the_market_sample_is_the_books(ops in proptest::collection::vec(op(), 1..60)) {
        let (mut engine, mut model) = fresh(1_000);
        for (t, op) in ops.iter().enumerate() {
            apply(&mut engine, &mut model, op, t as i64);
            let sample = engine.market_sample();
            prop_assert_eq!(sample, engine.market_sample_of_book(), "op {} {:?}", t, op);
            let served = super::pool_status::Served { cluster: "localnet", explorer_query: "" };
            let status = super::pool_status::pool_status(&engine, None, t as i64, 60, served);
            let sum = |f: fn(&lendex_wire::pools::PoolStatus) -> &String| {
                status.pools.iter().map(|p| f(p).parse::<U256>().unwrap()).fold(U256::ZERO, |a, b| a + b)
            };
            prop_assert_eq!(sample.deposits, sum(|p| &p.deposits_value_wad));
            prop_assert_eq!(sample.borrows, sum(|p| &p.borrows_value_wad));
        }
    }
}

/// Every record as text, in a stable order (records of one take have one time).
fn all_of(records: &[Record]) -> Vec<String> {
    let mut out: Vec<String> = records.iter().map(|r| format!("{r:?}")).collect();
    out.sort();
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Re-scored values are noted after the publish, or before anything else
    /// touches their owner: taking the records after a run of changes gives
    /// exactly the records of taking them after each change.
    #[test]
    fn deferred_notes_record_what_each_change_would(
        ops in proptest::collection::vec(op(), 1..60),
        takes in proptest::collection::vec(any::<bool>(), 60),
        max_owners in prop_oneof![Just(1_000usize), 2usize..6],
    ) {
        let (mut each, mut model) = fresh(max_owners);
        let (mut runs, mut other) = fresh(max_owners);
        each.start_history(no_past());
        runs.start_history(no_past());
        let (mut eager, mut batched) = (Vec::new(), Vec::new());
        for (t, op) in ops.iter().enumerate() {
            apply(&mut each, &mut model, op, t as i64);
            apply(&mut runs, &mut other, op, t as i64);
            eager.extend(each.take_history());
            if takes[t] {
                batched.extend(runs.take_history());
            }
        }
        batched.extend(runs.take_history());
        prop_assert_eq!(all_of(&eager), all_of(&batched));
    }
}

/// Pools in `fresh`, each with a first price row.
const POOLS_AND_NO_OWNER: usize = super::sample::POOLS;

#[test]
fn causes_name_what_moved() {
    let (mut engine, mut model) = fresh(1_000);
    engine.start_history(no_past());
    engine.take_history();
    // $10 of pool 0 (6 decimals) against 5 units of pool 2 (no decimals, index 1.1).
    apply(
        &mut engine,
        &mut model,
        &Op::SetOwner(1, vec![(0, 10_000_000, 0), (2, 0, 5)]),
        1,
    );
    let cause = |records: Vec<Record>| -> Vec<Cause> {
        records
            .into_iter()
            .filter_map(|r| match r {
                Record::Point(PointRecord { cause, .. }) => Some(cause),
                _ => None,
            })
            .collect()
    };
    assert_eq!(cause(engine.take_history()), vec![Cause::Position]);
    apply(&mut engine, &mut model, &Op::Price(0, Some(400_000)), 2);
    let records = engine.take_history();
    assert!(records.iter().any(
        |r| matches!(r, Record::Price(p) if p.pool == pool_key(0) && p.price == Some(400_000))
    ));
    assert_eq!(cause(records), vec![Cause::Price]);
    // Another pool field (the deposit index) is `terms`.
    let mut state = model.pools[0].clone();
    state.pricing.deposit_index_wad = 2 * WAD;
    model.pools[0] = state.clone();
    engine.upsert_pool(state);
    let records = engine.take_history();
    assert!(
        records.iter().all(|r| !matches!(r, Record::Price(_))),
        "no price moved"
    );
    assert_eq!(cause(records), vec![Cause::Terms]);
    // A reload that finds nothing new records nothing.
    apply(&mut engine, &mut model, &Op::Reload, 3);
    assert_eq!(engine.take_history(), vec![]);
}

#[test]
fn a_takeover_records_only_what_differs_from_the_last_points() {
    let (mut engine, mut model) = fresh(1_000);
    for (o, borrow) in [(1u8, 100u64), (2, 900), (3, 0)] {
        apply(
            &mut engine,
            &mut model,
            &Op::SetOwner(o, vec![(0, 1_000, borrow)]),
            1,
        );
    }
    // Not recording (a follower): nothing is kept.
    assert_eq!(engine.take_history(), vec![]);
    let now: BTreeMap<u8, u128> = [1u8, 2, 3]
        .into_iter()
        .map(|o| (o, engine.health_factor(&owner_key(o)).unwrap()))
        .collect();
    let hf = |o: u8| now[&o];
    let past = Baselines {
        owners: vec![
            // Owner 1: as now; owner 2: recorded above water before it sank;
            // owner 3 has no point; owner 9 closed everything meanwhile.
            (owner_key(1), Baseline::of(hf(1), false, false)),
            (owner_key(2), Baseline::of(2 * WAD, false, false)),
            (owner_key(9), Baseline::of(3 * WAD, false, false)),
        ],
        oracles: model
            .pools
            .iter()
            .map(|p| {
                (
                    p.address,
                    (
                        p.pricing.oracle_price,
                        p.terms.oracle_conf,
                        p.pricing.oracle_expo,
                    ),
                )
            })
            .collect(),
        feed_oracles: Vec::new(),
    };
    assert!(hf(2) < WAD);
    engine.start_history(past);
    let records = engine.take_history();
    let points: Vec<(Pubkey, u128)> = points_of(&records)
        .into_iter()
        .map(|p| (p.0, p.1))
        .collect();
    let mut expected = vec![
        (owner_key(2), hf(2)),
        (owner_key(3), u128::MAX),
        (owner_key(9), u128::MAX),
    ];
    expected.sort();
    assert_eq!(points, expected);
    assert_eq!(
        events_of(&records),
        vec![(owner_key(2), "under", 2 * WAD, hf(2))],
        "the crossing the old leader did not record"
    );
    assert!(
        records.iter().all(|r| !matches!(r, Record::Price(_))),
        "prices as recorded"
    );
    // Stopping forgets; starting again from the same past records the same.
    engine.stop_history();
    assert_eq!(engine.take_history(), vec![]);
}

#[test]
fn an_evicted_owner_comes_back_to_its_parked_baseline() {
    let (mut engine, mut model) = fresh(1);
    engine.start_history(no_past());
    apply(
        &mut engine,
        &mut model,
        &Op::SetOwner(1, vec![(0, 10_000, 10)]),
        1,
    );
    apply(
        &mut engine,
        &mut model,
        &Op::SetOwner(2, vec![(0, 10_000, 10)]),
        2,
    );
    assert!(
        !engine.holds(&owner_key(1)),
        "evicted past one healthy owner"
    );
    engine.take_history();
    // Re-loaded with the same positions: its value did not move, nothing to record.
    engine.set_owner(owner_key(1), model.owners[&owner_key(1)].clone());
    assert_eq!(points_of(&engine.take_history()), vec![]);
}

#[test]
fn a_liquidation_is_inferred_from_one_slot_of_two_positions() {
    let (mut engine, mut model) = fresh(1_000);
    // Collateral in pool 1 (9 decimals), debt in pool 0 (6), under water.
    for (pool, d, b) in [(1usize, 1_000u64, 0u64), (0, 0, 900)] {
        apply(&mut engine, &mut model, &Op::Upsert(1, pool, d, b, 5), 1);
    }
    assert!(engine.health_factor(&owner_key(1)).unwrap() < WAD);
    engine.start_history(no_past());
    engine.take_history();
    // Slot 9: the debt falls by 400, the collateral by 300, one batch each.
    apply(&mut engine, &mut model, &Op::Upsert(1, 0, 0, 500, 9), 2);
    apply(&mut engine, &mut model, &Op::Upsert(1, 1, 700, 0, 9), 3);
    let records = engine.take_history();
    let liquidated: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::Event(e) if e.kind == EventKind::Liquidated => Some(e.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(liquidated.len(), 1, "{records:?}");
    let e = &liquidated[0];
    let (debt_pool, repaid, collateral_pool, seized) = e.liquidation.unwrap();
    assert_eq!((debt_pool, collateral_pool), (pool_key(0), pool_key(1)));
    // Pool 0's borrow index is 1: 900 - 500.
    assert_eq!(repaid, 400);
    // Pool 1's deposit index is 1.02: 1020 - 714 tokens.
    assert_eq!(seized, 306);
    assert_eq!(e.slot, 9);
    assert!(e.health_factor_before < WAD);
}

#[test]
fn prices_of_one_change_are_scored_together_no_flap() {
    use super::sample::pool_state;
    let mut engine = Engine::new(10);
    engine.record_events(true);
    for i in 0..2 {
        engine.upsert_pool(pool_state(i, Some(1_000_000)));
    }
    engine.start_history(no_past());
    // Collateral in pool 0, debt in pool 1: healthy at equal prices.
    let position = |pool: usize, deposit: u64, borrow: u64| PositionState {
        address: Pubkey::new_from_array([10 + pool as u8; 32]),
        pool: pool_key(pool),
        amounts: PositionAmounts {
            deposit_shares: deposit,
            borrow_principal: borrow,
            borrow_idx_snap: WAD,
        },
        deposit_idx_snap: WAD,
        original_deposit: deposit,
        synced_us: 0,
        slot: 1,
    };
    let owner = owner_key(1);
    engine.set_owner(
        owner,
        vec![position(0, 1_000_000, 0), position(1, 0, 500_000_000)],
    );
    let before = engine.health_factor(&owner).unwrap();
    assert!(before >= WAD);
    engine.take_events();
    engine.take_history();
    // 1 of collateral ($0.80 weighted) against $0.525 of debt: 1.52. One
    // committed change: the debt's price doubles (under water alone) and the
    // collateral's goes up tenfold (healthy together).
    let priced = |i: usize, price: i64| PoolState {
        slot: 2,
        ..pool_state(i, Some(price))
    };
    engine.apply(vec![
        Change::Pool(priced(1, 2_000_000)),
        Change::Pool(priced(0, 10_000_000)),
    ]);
    assert!(engine.health_factor(&owner).unwrap() >= WAD);
    assert!(engine.take_events().is_empty(), "no start, no stop");
    let events: Vec<Record> = engine
        .take_history()
        .into_iter()
        .filter(|r| matches!(r, Record::Event(_)))
        .collect();
    assert!(events.is_empty(), "{events:?}");
}

#[test]
fn a_usable_feed_records_a_price_row_per_change_of_its_pools() {
    use super::oracle::FeedReading;
    use super::sample::pool_state;
    use lendex_domain::history::PriceSource;
    use lendex_domain::pyth::{FeedPrice, FeedStatus};
    let feed = Pubkey::new_from_array([100; 32]);
    let reading = |price: i64, status: FeedStatus, slot: u64| FeedReading {
        status,
        price: Some(FeedPrice {
            price,
            conf: 9,
            exponent: -8,
            publish_time: 1_700_000_000,
            posted_slot: slot,
        }),
        slot,
    };
    let named = |slot: u64, feed: Option<Pubkey>| PoolState {
        slot,
        feed,
        ..pool_state(0, Some(1_000_000))
    };
    let feed_rows = |engine: &mut Engine| -> Vec<(Pubkey, u64, Option<i64>)> {
        (engine.take_history().into_iter())
            .filter_map(|r| match r {
                Record::Price(p) if p.source == PriceSource::Feed => {
                    Some((p.pool, p.slot, p.price))
                }
                _ => None,
            })
            .collect()
    };
    let mut engine = Engine::new(10);
    engine.upsert_pool(named(1, Some(feed)));
    // Read before recording starts: the baseline holds another price, so
    // the start records the one read now.
    engine.load_feed_readings(&[(feed, reading(2_000, FeedStatus::Ok, 1))]);
    engine.start_history(Baselines {
        feed_oracles: vec![(pool_key(0), (Some(1_500), Some(9), Some(-8)))],
        ..no_past()
    });
    assert_eq!(feed_rows(&mut engine), vec![(pool_key(0), 1, Some(2_000))]);
    let read = |engine: &mut Engine, r: FeedReading| {
        engine.apply(vec![Change::Feed { feed, reading: r }]);
    };
    // The same price again, an unusable reading, an older one: nothing.
    read(&mut engine, reading(2_000, FeedStatus::Ok, 2));
    read(
        &mut engine,
        reading(2_100, FeedStatus::PartiallyVerified, 3),
    );
    read(&mut engine, reading(2_200, FeedStatus::Ok, 0));
    assert_eq!(feed_rows(&mut engine), vec![]);
    // A new price: one row, at the reading's slot.
    read(&mut engine, reading(2_300, FeedStatus::Ok, 4));
    assert_eq!(feed_rows(&mut engine), vec![(pool_key(0), 4, Some(2_300))]);
    // The pool names another feed, already read at another price: its row.
    let other = Pubkey::new_from_array([101; 32]);
    engine.apply(vec![Change::Feed {
        feed: other,
        reading: reading(2_400, FeedStatus::Ok, 5),
    }]);
    assert_eq!(feed_rows(&mut engine), vec![]);
    engine.apply(vec![Change::Pool(named(6, Some(other)))]);
    assert_eq!(feed_rows(&mut engine), vec![(pool_key(0), 5, Some(2_400))]);
    // A pool naming none records no feed row; the pool view's copy is
    // recorded as ever (source pool).
    engine.apply(vec![Change::Pool(PoolState {
        slot: 7,
        feed: None,
        ..pool_state(0, Some(1_100_000))
    })]);
    let rows = engine.take_history();
    let sources: Vec<PriceSource> = (rows.iter())
        .filter_map(|r| match r {
            Record::Price(p) => Some(p.source),
            _ => None,
        })
        .collect();
    assert_eq!(sources, vec![PriceSource::Pool]);
}
