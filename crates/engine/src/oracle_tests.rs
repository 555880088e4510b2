//! The feed valuation against a brute-force model: for random markets, feed
//! and copy prices and crank orders, the feed view fed change by change
//! equals a fresh scoring at the effective prices, and equals the pool view
//! whenever every copy equals its feed.

use proptest::prelude::*;

use super::oracle::{FeedReading, OracleFeeds, at_feed};
use crate::sample::*;
use crate::{Change, Engine};
use lendex_domain::pubkey::Pubkey;
use lendex_domain::pyth::{FeedPrice, FeedStatus, PriceMessage, PriceUpdate, Verification};

fn feed_key(pool: usize) -> Pubkey {
    Pubkey::new_from_array([100 + pool as u8; 32])
}

/// A price as the copy or the feed holds it: (price, conf, exponent).
type Price = (i64, u64, i32);

fn price() -> impl Strategy<Value = Price> {
    (
        prop_oneof![Just(400_000i64), Just(1_000_000), 1i64..5_000_000],
        prop_oneof![Just(1_000u64), 0u64..5_000],
        prop_oneof![Just(-6i32), Just(-8)],
    )
}

fn status() -> impl Strategy<Value = FeedStatus> {
    prop_oneof![
        6 => Just(FeedStatus::Ok),
        1 => Just(FeedStatus::PartiallyVerified),
        1 => Just(FeedStatus::Nonpositive),
        1 => Just(FeedStatus::Missing),
        1 => Just(FeedStatus::NotAPriceUpdate),
    ]
}

fn reading((price, conf, exponent): Price, status: FeedStatus, slot: u64) -> FeedReading {
    let update = PriceUpdate {
        write_authority: Pubkey::new_from_array([3; 32]),
        verification: if status == FeedStatus::PartiallyVerified {
            Verification::Partial { num_signatures: 5 }
        } else {
            Verification::Full
        },
        message: PriceMessage {
            feed_id: [4; 32],
            price: if status == FeedStatus::Nonpositive {
                -price
            } else {
                price
            },
            conf,
            exponent,
            publish_time: 1_700_000_000 + slot as i64,
            prev_publish_time: 1_700_000_000,
            ema_price: price,
            ema_conf: conf,
        },
        posted_slot: slot,
    };
    let decodes = !matches!(status, FeedStatus::Missing | FeedStatus::NotAPriceUpdate);
    FeedReading {
        status,
        price: decodes.then_some(FeedPrice::from(&update)),
        slot,
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// A pool's copy moves.
    Copy(usize, Price),
    /// A pool's feed is read.
    Feed(usize, Price, FeedStatus),
    /// A crank lands: the copy takes its feed's (price, conf, exponent).
    Crank(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..POOLS, price()).prop_map(|(p, x)| Op::Copy(p, x)),
        (0..POOLS, price(), status()).prop_map(|(p, x, s)| Op::Feed(p, x, s)),
        (0..POOLS).prop_map(Op::Crank),
    ]
}

fn copy_state(pool: usize, (price, conf, exponent): Price, slot: u64) -> crate::PoolState {
    let mut state = pool_state(pool, Some(price));
    state.pricing.oracle_expo = Some(exponent);
    state.terms.oracle_conf = Some(conf);
    state.slot = slot;
    state.feed = Some(feed_key(pool));
    state
}

/// Every owner's health factor and quote, in key order.
fn scores(engine: &Engine, owners: &[Pubkey]) -> Vec<(Pubkey, Option<u128>, Option<String>)> {
    owners
        .iter()
        .map(|o| {
            let view = engine.peek(o);
            let quote = view.and_then(|v| v.quote.map(|q| format!("{q:?}")));
            (*o, engine.health_factor(o), quote)
        })
        .collect()
}

fn positions_of(engine: &Engine, owner: &Pubkey) -> Vec<crate::PositionState> {
    let view = engine.peek(owner).expect("resident");
    (view.positions.iter())
        .map(|(held, pool)| held.state(pool.state.address))
        .collect()
}

fn market(engine: &mut Engine) -> Vec<Pubkey> {
    let (sample, owners) = sample_market(OWNERS);
    for owner in &owners {
        engine.set_owner(*owner, positions_of(&sample, owner));
    }
    owners
}

proptest! {
    #[test]
    fn the_feed_view_is_a_fresh_scoring_at_the_effective_prices(
        copies in proptest::collection::vec(price(), POOLS),
        ops in proptest::collection::vec(op(), 0..40),
    ) {
        let mut feeds = OracleFeeds::default();
        let mut feed_view = Engine::new(usize::MAX);
        let mut pool_view = Engine::new(usize::MAX);
        let mut copy: Vec<Price> = copies.clone();
        let mut last: Vec<Option<FeedReading>> = vec![None; POOLS];
        for (i, c) in copies.iter().enumerate() {
            let state = copy_state(i, *c, 1);
            pool_view.upsert_pool(state.clone());
            feed_view.upsert_pool(feeds.copy(state).expect("not older"));
        }
        // As the service runs it: the feed view holds the pool view's
        // lists and takes its scores where a pool is at its copy.
        feed_view.note_position_writes();
        let owners = market(&mut feed_view);
        market(&mut pool_view);
        prop_assert_eq!(feed_view.share_positions(&pool_view), owners.len());
        for (t, op) in ops.iter().enumerate() {
            let slot = 2 + t as u64;
            match *op {
                Op::Copy(i, c) => copy[i] = c,
                Op::Crank(i) => match last[i].and_then(|r| r.price.filter(|_| r.status == FeedStatus::Ok)) {
                    Some(u) => copy[i] = (u.price, u.conf, u.exponent),
                    None => continue,
                },
                Op::Feed(i, x, s) => {
                    let r = reading(x, s, slot);
                    last[i] = Some(r);
                    let moved = feeds.reading(&feed_key(i), r).into_iter().map(Change::Pool);
                    feed_view.apply_beside(moved.collect(), &pool_view);
                    continue;
                }
            }
            let state = match *op {
                Op::Copy(i, _) | Op::Crank(i) => copy_state(i, copy[i], slot),
                Op::Feed(..) => unreachable!("handled above"),
            };
            pool_view.upsert_pool(state.clone());
            let state = feeds.copy(state).expect("not older");
            feed_view.apply_beside(vec![Change::Pool(state)], &pool_view);
        }
        prop_assert_eq!(feed_view.shared_position_lists(), owners.len());
        // The model: every pool at its effective price, scored afresh.
        let mut fresh = Engine::new(usize::MAX);
        let mut all_equal = true;
        for i in 0..POOLS {
            // A usable feed's (price, conf, exponent), else the copy's.
            let usable = last[i]
                .filter(|r| r.status == FeedStatus::Ok)
                .and_then(|r| r.price)
                .map(|u| (u.price, u.conf, u.exponent));
            let effective = usable.unwrap_or(copy[i]);
            let crank = effective != copy[i];
            prop_assert_eq!(feeds.crank(&pool_key(i)), crank, "pool {}", i);
            let held = &feed_view.pool(&pool_key(i)).expect("held").state;
            prop_assert_eq!(held.crank, crank, "pool {}", i);
            all_equal &= !crank;
            fresh.upsert_pool(copy_state(i, effective, 1));
        }
        market(&mut fresh);
        // Each pool at the same price, confidence and exponent...
        for i in 0..POOLS {
            let held = |e: &Engine| {
                let s = &e.pool(&pool_key(i)).expect("held").state;
                (s.pricing, s.terms)
            };
            prop_assert_eq!(held(&feed_view), held(&fresh), "pool {}", i);
        }
        // ...and every owner scored and quoted alike.
        prop_assert_eq!(scores(&feed_view, &owners), scores(&fresh, &owners));
        prop_assert_eq!(
            feed_view.unhealthy().collect::<Vec<_>>(),
            fresh.unhealthy().collect::<Vec<_>>()
        );
        if all_equal {
            prop_assert_eq!(scores(&feed_view, &owners), scores(&pool_view, &owners));
        }
    }
}

#[test]
fn a_pool_follows_its_new_feed_and_forgets_the_old() {
    let mut feeds = OracleFeeds::default();
    let copy = copy_state(0, (1_000_000, 1_000, -6), 1);
    feeds.copy(copy.clone()).expect("not older");
    let moved = feeds.reading(
        &feed_key(0),
        reading((1_100_000, 1_000, -6), FeedStatus::Ok, 2),
    );
    assert_eq!(moved[0].pricing.oracle_price, Some(1_100_000));
    assert!(feeds.crank(&pool_key(0)));
    // The pool names another feed, not read yet: valued at its copy.
    let state = feeds
        .copy(crate::PoolState {
            feed: Some(feed_key(1)),
            ..copy.clone()
        })
        .expect("not older");
    assert_eq!(state.pricing.oracle_price, Some(1_000_000));
    assert!(!feeds.crank(&pool_key(0)));
    assert_eq!(feeds.feeds(), vec![feed_key(1)]);
    // A copy older than the one held is not taken.
    let older = crate::PoolState {
        slot: 0,
        ..copy.clone()
    };
    assert!(feeds.copy(older).is_none());
    assert_eq!(feeds.feeds(), vec![feed_key(1)]);
    assert!(
        feeds
            .reading(&feed_key(0), reading((9, 1, -6), FeedStatus::Ok, 3))
            .is_empty()
    );
    let moved = feeds.reading(
        &feed_key(1),
        reading((900_000, 1_000, -8), FeedStatus::Ok, 4),
    );
    assert_eq!(moved.len(), 1);
    // The feed's exponent, exactly, and its slot.
    assert_eq!(moved[0].pricing.oracle_expo, Some(-8));
    assert_eq!(moved[0].slot, 4);
    // An older reading changes nothing.
    assert!(
        feeds
            .reading(&feed_key(1), reading((1, 1, -6), FeedStatus::Ok, 3))
            .is_empty()
    );
}

#[test]
fn a_bad_feed_values_the_pool_at_its_copy() {
    let copy = copy_state(0, (1_000_000, 1_000, -6), 1);
    for status in [
        FeedStatus::Missing,
        FeedStatus::NotAPriceUpdate,
        FeedStatus::PartiallyVerified,
        FeedStatus::Nonpositive,
    ] {
        let (state, crank) = at_feed(&copy, Some(&reading((2_000_000, 5, -6), status, 9)));
        // The copy, at the newer of the two reads.
        let at_copy = crate::PoolState {
            slot: 9,
            ..copy.clone()
        };
        assert_eq!((state, crank), (at_copy, false), "{status:?}");
    }
    let (state, crank) = at_feed(
        &copy,
        Some(&reading((1_000_000, 1_000, -6), FeedStatus::Ok, 9)),
    );
    assert_eq!(
        (state.pricing, state.terms, crank),
        (copy.pricing, copy.terms, false),
        "a feed equal to its copy"
    );
}

#[test]
fn a_crank_landing_updates_the_owners_under_water_and_starts_none() {
    let mut feeds = OracleFeeds::default();
    let mut view = Engine::new(usize::MAX);
    view.record_events(true);
    for i in 0..POOLS {
        view.upsert_pool(
            feeds
                .copy(copy_state(i, (1_000_000, 1_000, -6), 1))
                .expect("not older"),
        );
    }
    market(&mut view);
    view.take_events();
    // Pool 0's feed falls to a tenth: its depositors go under in this view.
    let fallen = (100_000, 1_000, -6);
    for state in feeds.reading(&feed_key(0), reading(fallen, FeedStatus::Ok, 2)) {
        view.upsert_pool(state);
    }
    let started: Vec<Pubkey> = view.take_events().iter().map(|e| e.owner()).collect();
    assert!(
        !started.is_empty(),
        "the sample market has depositors of pool 0"
    );
    assert!(view.pool(&pool_key(0)).expect("held").state.crank);
    // The crank lands: the same price, so the same health factors; each of
    // them is updated (its list of pools to crank is shorter), none started.
    view.upsert_pool(feeds.copy(copy_state(0, fallen, 3)).expect("not older"));
    assert!(!view.pool(&pool_key(0)).expect("held").state.crank);
    let events = view.take_events();
    assert!(events.iter().all(|e| e.name() == "candidate_update"));
    let mut updated: Vec<Pubkey> = events.iter().map(|e| e.owner()).collect();
    let mut started = started;
    updated.sort_unstable();
    started.sort_unstable();
    assert_eq!(updated, started);
}
