//! The engine against a brute-force model: after any sequence of position and
//! price changes, every resident owner's health factor, the unhealthy set and the
//! ranking equal a recomputation from scratch with `domain::wad`, and eviction
//! never drops an unhealthy owner.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use lendex_domain::wad::PoolPricing;

use crate::sample::*;

#[derive(Debug, Clone)]
pub(super) enum Op {
    /// An owner's whole set of positions: (pool, deposit, borrow); empty removes.
    SetOwner(u8, Vec<(usize, u64, u64)>),
    /// A pool's new price (None: no oracle).
    Price(usize, Option<i64>),
    /// A committed write of one position (owner, pool, deposit, borrow), read
    /// at a slot, applied as a change (`Engine::apply`); the row may hold a
    /// newer read, and changes may come out of order.
    Upsert(u8, usize, u64, u64, u64),
    /// A position removed by a read at a slot.
    Remove(u8, usize, u64),
    /// IndexSnapshot read again from the database (after a lost LISTEN).
    Reload,
}

pub(super) fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..OWNERS, proptest::collection::vec((0..POOLS, 0u64..2_000, 0u64..2_000), 0..4))
            .prop_map(|(o, ps)| Op::SetOwner(o, ps)),
        // Prices mostly from a few levels, so values move back to earlier ones
        // (as markets do), sometimes anywhere, sometimes no oracle.
        1 => (0..POOLS, prop_oneof![
                4 => prop::sample::select(vec![400_000i64, 1_000_000, 2_500_000]).prop_map(Some),
                1 => (1i64..5_000_000).prop_map(Some),
                1 => Just(None),
            ])
            .prop_map(|(p, price)| Op::Price(p, price)),
        2 => (0..OWNERS, 0..POOLS, 0u64..2_000, 0u64..2_000, 0u64..20)
            .prop_map(|(o, p, d, b, slot)| Op::Upsert(o, p, d, b, slot)),
        1 => (0..OWNERS, 0..POOLS, 0u64..20).prop_map(|(o, p, slot)| Op::Remove(o, p, slot)),
        1 => Just(Op::Reload),
    ]
}

/// The model: the same facts, scored from scratch.
pub(crate) struct Model {
    pub(crate) pools: Vec<PoolState>,
    pub(crate) owners: BTreeMap<Pubkey, Vec<PositionState>>,
}

impl Model {
    pub(crate) fn hf(&self, positions: &[PositionState]) -> u128 {
        let inputs: Vec<(&PoolPricing, &PositionAmounts)> = positions
            .iter()
            .map(|p| {
                let pool = self.pools.iter().find(|x| x.address == p.pool).unwrap();
                (&pool.pricing, &p.amounts)
            })
            .collect();
        account_health_factor(inputs)
    }

    fn watched(&self) -> Vec<(u128, Pubkey)> {
        let mut out: Vec<(u128, Pubkey)> = self
            .owners
            .iter()
            .map(|(k, ps)| (self.hf(ps), *k))
            .filter(|(hf, _)| (WAD..WATCH_BELOW).contains(hf))
            .collect();
        out.sort();
        out
    }

    fn unhealthy(&self) -> Vec<(u128, Pubkey)> {
        let mut out: Vec<(u128, Pubkey)> = self
            .owners
            .iter()
            .map(|(k, ps)| (self.hf(ps), *k))
            .filter(|(hf, _)| *hf < WAD)
            .collect();
        out.sort();
        out
    }
}

/// Applies one op to both; a pool that lost members to eviction gets its owners
/// re-loaded from the model, as the actor re-loads them from the database.
pub(super) fn apply(engine: &mut Engine, model: &mut Model, op: &Op, t: i64) {
    match op {
        Op::SetOwner(o, ps) => {
            let mut by_pool: BTreeMap<usize, (u64, u64)> = BTreeMap::new();
            for (pool, d, b) in ps {
                by_pool.insert(*pool, (*d, *b));
            }
            let positions: Vec<PositionState> = by_pool
                .into_iter()
                .map(|(pool, (d, b))| position(*o, pool, d, b, t))
                .collect();
            let key = owner_key(*o);
            if positions.is_empty() {
                model.owners.remove(&key);
            } else {
                model.owners.insert(key, positions.clone());
            }
            engine.set_owner(key, positions);
        }
        Op::Price(p, price) => {
            let state = pool_state(*p, *price);
            model.pools[*p] = state.clone();
            if engine.upsert_pool(state) {
                for (key, positions) in &model.owners {
                    if positions.iter().any(|x| x.pool == pool_key(*p)) {
                        engine.set_owner(*key, positions.clone());
                    }
                }
            }
        }
        Op::Upsert(o, p, d, b, slot) => {
            let key = owner_key(*o);
            let state = PositionState {
                slot: *slot,
                ..position(*o, *p, *d, *b, t)
            };
            // The database's slot guard: a row read at a newer slot stays.
            let rows = model.owners.entry(key).or_default();
            match rows.iter_mut().find(|x| x.address == state.address) {
                Some(row) if row.slot > state.slot => {}
                Some(row) => *row = state.clone(),
                None => {
                    rows.push(state.clone());
                    rows.sort_by_key(|x| x.address);
                }
            }
            let change = Change::Position {
                owner: key,
                position: state,
                row_health_factor: u128::MAX,
            };
            let unapplied = engine.apply(vec![change]);
            reload_unapplied(engine, model, unapplied);
        }
        Op::Remove(o, p, slot) => {
            let key = owner_key(*o);
            let address = position_key(*o, *p);
            if let Some(rows) = model.owners.get_mut(&key) {
                rows.retain(|x| x.address != address || x.slot > *slot);
                if rows.is_empty() {
                    model.owners.remove(&key);
                }
            }
            let change = Change::Removed {
                owner: key,
                position: address,
                slot: *slot,
            };
            let unapplied = engine.apply(vec![change]);
            reload_unapplied(engine, model, unapplied);
        }
        Op::Reload => {
            engine.clear();
            for pool in &model.pools {
                engine.upsert_pool(pool.clone());
            }
            for (key, positions) in &model.owners {
                engine.set_owner(*key, positions.clone());
            }
            engine.end_reload();
        }
    }
}

/// What the engine could not apply from memory is read from the database (the
/// model), as the actor does.
fn reload_unapplied(engine: &mut Engine, model: &Model, unapplied: Unapplied) {
    for key in unapplied.owners {
        engine.set_owner(key, model.owners.get(&key).cloned().unwrap_or_default());
    }
}

fn check(engine: &mut Engine, model: &Model, max_owners: usize) {
    for (key, positions) in &model.owners {
        let expected = model.hf(positions);
        match engine.health_factor(key) {
            Some(hf) => assert_eq!(hf, expected, "owner {key}"),
            None => assert!(
                expected >= WATCH_BELOW,
                "an unhealthy or watched owner {key} was evicted"
            ),
        }
        if let Some(view) = engine.peek(key) {
            let mut held: Vec<PositionState> = view
                .positions
                .iter()
                .map(|(p, pool)| p.state(pool.state.address))
                .collect();
            held.sort_by_key(|p| p.address);
            assert_eq!(&held, positions);
        }
    }
    let ranking: Vec<(u128, Pubkey)> = engine.unhealthy().collect();
    assert_eq!(ranking, model.unhealthy());
    assert_eq!(
        engine.watched_below(WATCH_BELOW),
        model.watched(),
        "the watch band"
    );
    assert_eq!(engine.watched_count(), model.watched().len());
    assert!(engine.owner_count() <= max_owners + engine.unhealthy_count() + engine.watched_count());
    // Every owner under water carries the best quote of its positions (§8).
    for (_, key) in &ranking {
        let view = engine.peek(key).unwrap();
        assert_eq!(
            view.quote.cloned(),
            view.quote_with(None, None),
            "owner {key}"
        );
    }
    for key in engine.owners.resident().map(|o| &o.key) {
        assert!(
            model.owners.contains_key(key),
            "owner {key} resident but gone"
        );
    }
}

pub(super) fn fresh(max_owners: usize) -> (Engine, Model) {
    let mut engine = Engine::new(max_owners);
    let pools: Vec<PoolState> = (0..POOLS).map(|i| pool_state(i, Some(1_000_000))).collect();
    for p in &pools {
        engine.upsert_pool(p.clone());
    }
    (
        engine,
        Model {
            pools,
            owners: BTreeMap::new(),
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn matches_a_recomputation_after_any_changes(
        ops in proptest::collection::vec(op(), 1..60),
        max_owners in 1usize..8,
    ) {
        let (mut engine, mut model) = fresh(max_owners);
        for (t, op) in ops.iter().enumerate() {
            apply(&mut engine, &mut model, op, t as i64);
            check(&mut engine, &model, max_owners);
        }
    }

    /// Replaying the events in order gives exactly the unhealthy set.
    #[test]
    fn the_events_replay_to_the_unhealthy_set(ops in proptest::collection::vec(op(), 1..60)) {
        let (mut engine, mut model) = fresh(1_000);
        engine.record_events(true);
        let mut replayed: BTreeMap<Pubkey, u128> = BTreeMap::new();
        for (t, op) in ops.iter().enumerate() {
            apply(&mut engine, &mut model, op, t as i64);
            for event in engine.take_events() {
                match event {
                    FeedEvent::Start(o, hf) => {
                        prop_assert!(replayed.insert(o, hf).is_none(), "start twice");
                    }
                    FeedEvent::Update(o, hf) => {
                        prop_assert!(replayed.insert(o, hf).is_some(), "update before start");
                    }
                    FeedEvent::Stop(o, _) | FeedEvent::Gone(o, _) => {
                        prop_assert!(replayed.remove(&o).is_some(), "stop before start");
                    }
                }
            }
            let expected: BTreeMap<Pubkey, u128> =
                model.unhealthy().into_iter().map(|(hf, o)| (o, hf)).collect();
            prop_assert_eq!(&replayed, &expected);
        }
    }

    /// What the store ends up holding is every owner's value, even when writes
    /// are still in flight while the values move again (and some writes fail).
    #[test]
    fn the_store_converges_with_writes_in_flight(
        ops in proptest::collection::vec(op(), 1..40),
        fails in proptest::collection::vec(any::<bool>(), 40),
    ) {
        let (mut engine, mut model) = fresh(1_000);
        let mut store: BTreeMap<Pubkey, u128> = BTreeMap::new();
        let mut in_flight = None;
        let complete = |engine: &mut Engine, store: &mut BTreeMap<Pubkey, u128>, batch: FastMap<Pubkey, u128>, ok: bool| {
            if ok {
                for (k, hf) in &batch {
                    store.insert(*k, *hf);
                }
            }
            engine.written(batch, ok);
        };
        for (t, op) in ops.iter().enumerate() {
            apply(&mut engine, &mut model, op, t as i64);
            if t % 2 == 0 {
                // The previous write completes only now, after more changes.
                if let Some(batch) = in_flight.take() {
                    complete(&mut engine, &mut store, batch, !fails[t]);
                }
                in_flight = Some(engine.take_dirty());
            }
        }
        if let Some(batch) = in_flight.take() {
            complete(&mut engine, &mut store, batch, true);
        }
        // Flush until nothing is left (every write succeeds now).
        while engine.has_dirty() {
            let batch = engine.take_dirty();
            complete(&mut engine, &mut store, batch, true);
        }
        for (key, positions) in &model.owners {
            prop_assert_eq!(store.get(key).copied(), Some(model.hf(positions)), "owner {}", key);
        }
    }

    /// Webhooks' moves across any change, a full reload included, cross
    /// every line as the owners' values before and after it do.
    #[test]
    fn moves_cross_each_line_as_the_values_do(
        ops in proptest::collection::vec(op(), 1..40),
        missed in proptest::collection::vec(any::<bool>(), 40),
    ) {
        use lendex_domain::webhooks::crossing::{MAX_LINE, crossing};
        use lendex_domain::webhooks::judge::{Moved, net};
        let (mut engine, mut model) = fresh(1_000);
        engine.record_moves(true);
        let values = |model: &Model| -> BTreeMap<Pubkey, u128> {
            model.owners.iter().map(|(k, p)| (*k, model.hf(p))).collect()
        };
        for (t, op) in ops.iter().enumerate() {
            let before = values(&model);
            if missed[t] {
                // A change the engine never heard of, then a reload.
                apply(&mut fresh(1_000).0, &mut model, op, t as i64);
                apply(&mut engine, &mut model, &Op::Reload, t as i64);
            } else {
                apply(&mut engine, &mut model, op, t as i64);
            }
            let after = values(&model);
            let moves = net(engine.take_moves().into_iter().map(|m| Moved {
                owner: m.owner,
                before: m.before,
                after: m.after,
            }));
            for line in [WAD / 2, WAD, 105 * WAD / 100, 3 * WAD, MAX_LINE] {
                let seen: BTreeMap<Pubkey, _> = (moves.iter())
                    .filter_map(|m| Some((m.owner, crossing(m.before, m.after, line)?)))
                    .collect();
                let due: BTreeMap<Pubkey, _> = (after.iter())
                    .filter_map(|(o, a)| Some((*o, crossing(before.get(o).copied(), *a, line)?)))
                    .collect();
                prop_assert_eq!(seen, due, "{:?} at line {}", op, line);
            }
        }
    }
}

#[test]
fn a_failed_write_is_written_again() {
    let (mut engine, mut model) = fresh(10);
    apply(
        &mut engine,
        &mut model,
        &Op::SetOwner(1, vec![(0, 100, 90)]),
        1,
    );
    let batch = engine.take_dirty();
    assert_eq!(batch.len(), 1);
    assert!(!engine.has_dirty());
    engine.written(batch.clone(), false);
    assert_eq!(engine.take_dirty(), batch);
    engine.written(batch, true);
    assert!(!engine.has_dirty());
    // A value already stored is not written again.
    apply(
        &mut engine,
        &mut model,
        &Op::SetOwner(1, vec![(0, 100, 90)]),
        2,
    );
    assert!(!engine.has_dirty());
}

#[test]
fn a_new_writer_writes_every_resident_owner_once() {
    let (mut engine, mut model) = fresh(10);
    for (owner, slot) in [(1, 1), (2, 2), (3, 3)] {
        apply(
            &mut engine,
            &mut model,
            &Op::SetOwner(owner, vec![(0, 100, 90)]),
            slot,
        );
    }
    // Believed stored by another writer.
    let batch = engine.take_dirty();
    engine.written(batch, true);
    assert!(!engine.has_dirty());
    engine.forget_stored();
    assert_eq!(engine.dirty_count(), 3);
    let batch = engine.take_dirty();
    engine.written(batch, true);
    assert!(!engine.has_dirty(), "written once, then known stored");
}

#[test]
fn a_known_stored_value_is_not_written() {
    let (mut engine, mut model) = fresh(10);
    apply(
        &mut engine,
        &mut model,
        &Op::SetOwner(1, vec![(0, 100, 0)]),
        1,
    );
    engine.set_stored(&owner_key(1), u128::MAX);
    assert!(!engine.has_dirty());
}

#[test]
fn events_for_start_update_and_stop() {
    let (mut engine, mut model) = fresh(10);
    engine.record_events(true);
    let o = owner_key(1);
    // 100 deposit x 0.8 against 90 debt in the same pool: 0.888...
    apply(
        &mut engine,
        &mut model,
        &Op::SetOwner(1, vec![(0, 100, 90)]),
        1,
    );
    let hf = 80 * WAD / 90;
    assert_eq!(engine.take_events(), vec![FeedEvent::Start(o, hf)]);
    apply(
        &mut engine,
        &mut model,
        &Op::SetOwner(1, vec![(0, 100, 95)]),
        2,
    );
    assert_eq!(
        engine.take_events(),
        vec![FeedEvent::Update(o, 80 * WAD / 95)]
    );
    // Same value, same rows: nothing to say.
    apply(
        &mut engine,
        &mut model,
        &Op::SetOwner(1, vec![(0, 100, 95)]),
        3,
    );
    assert_eq!(engine.take_events(), vec![]);
    apply(
        &mut engine,
        &mut model,
        &Op::SetOwner(1, vec![(0, 100, 10)]),
        4,
    );
    assert_eq!(engine.take_events(), vec![FeedEvent::Stop(o, 8 * WAD)]);
    apply(
        &mut engine,
        &mut model,
        &Op::SetOwner(1, vec![(0, 100, 90)]),
        5,
    );
    // Its last position closed, read at slot 9: gone, and the stop says when.
    apply(&mut engine, &mut model, &Op::Remove(1, 0, 9), 6);
    assert_eq!(
        engine.take_events(),
        vec![FeedEvent::Start(o, hf), FeedEvent::Gone(o, 9)]
    );
}

#[test]
fn a_price_move_reranks_and_a_removed_pool_takes_its_positions() {
    let (mut engine, mut model) = fresh(10);
    // Owner 1 borrows in pool 1 against pool 0; owner 2 borrows less.
    apply(
        &mut engine,
        &mut model,
        &Op::SetOwner(1, vec![(0, 1_000, 0), (1, 0, 700)]),
        1,
    );
    apply(
        &mut engine,
        &mut model,
        &Op::SetOwner(2, vec![(0, 1_000, 0), (1, 0, 600)]),
        2,
    );
    assert_eq!(engine.unhealthy_count(), 0);
    // Pool 0 is 6 decimals, pool 1 is 9: debt of 700 base units at 9 decimals is
    // tiny; raise pool 1's price so both fall under.
    apply(
        &mut engine,
        &mut model,
        &Op::Price(1, Some(2_000_000_000)),
        3,
    );
    let ranked: Vec<Pubkey> = engine.unhealthy().map(|(_, o)| o).collect();
    assert_eq!(
        ranked,
        vec![owner_key(1), owner_key(2)],
        "most underwater first"
    );
    check(&mut engine, &model, 10);
    engine.remove_pool(&pool_key(1));
    assert_eq!(engine.unhealthy_count(), 0);
    assert_eq!(engine.health_factor(&owner_key(1)), Some(u128::MAX));
    assert!(engine.pool(&pool_key(1)).is_none());
}

#[test]
fn a_full_lru_evicts_healthy_owners_only() {
    let (mut engine, mut model) = fresh(2);
    for o in 0..6u8 {
        // Even owners healthy, odd owners under water.
        let borrow = if o % 2 == 0 { 10 } else { 95 };
        apply(
            &mut engine,
            &mut model,
            &Op::SetOwner(o, vec![(0, 100, borrow)]),
            o.into(),
        );
    }
    assert_eq!(engine.unhealthy_count(), 3);
    assert_eq!(engine.owner_count(), 5, "3 unhealthy + 2 healthy");
    assert!(engine.evictions() > 0);
    assert!(
        !engine.knows(&owner_key(0)),
        "the oldest healthy owner was evicted"
    );
    assert!(engine.knows(&owner_key(4)));
    // A price move on the pool of an evicted owner asks for a re-load.
    assert!(engine.upsert_pool(pool_state(0, Some(900_000))));
    check(&mut engine, &model, 2);
}

#[test]
fn touches_move_sync_times_and_slots_only() {
    let mut engine = Engine::new(10);
    for i in 0..2 {
        engine.upsert_pool(pool_state(i, Some(1_000_000)));
    }
    let at = |owner: u8, pool: usize, slot: u64, t: i64| PositionState {
        slot,
        ..position(owner, pool, 100, 50, t)
    };
    engine.set_owner(owner_key(1), vec![at(1, 0, 5, 10), at(1, 1, 9, 20)]);
    engine.set_owner(owner_key(2), vec![at(2, 0, 12, 30)]);
    let hf = engine.health_factor(&owner_key(1));
    engine.take_events();
    let held = |engine: &mut Engine, owner: u8| -> Vec<(Pubkey, u64, i64)> {
        let view = engine.view(&owner_key(owner)).unwrap();
        view.positions
            .iter()
            .map(|(p, _)| (p.address, p.slot, p.synced_us))
            .collect()
    };
    // One position read again: its time and slot, nothing else.
    engine.apply(vec![Change::Touched {
        owner: owner_key(1),
        position: position_key(1, 0),
        slot: 7,
        synced_us: 40,
    }]);
    assert_eq!(
        held(&mut engine, 1),
        vec![(position_key(1, 0), 7, 40), (position_key(1, 1), 9, 20)],
        "newest sync first"
    );
    // Pool 0 reconciled at slot 10: every position of it held below 10.
    engine.apply(vec![Change::PoolTouched {
        pool: pool_key(0),
        slot: 10,
        synced_us: 50,
    }]);
    assert_eq!(
        held(&mut engine, 1),
        vec![(position_key(1, 0), 10, 50), (position_key(1, 1), 9, 20)]
    );
    assert_eq!(
        held(&mut engine, 2),
        vec![(position_key(2, 0), 12, 30)],
        "a row read at a newer slot was not stamped"
    );
    assert_eq!(engine.health_factor(&owner_key(1)), hf);
    assert!(engine.take_events().is_empty(), "a touch is no event");
    // A touch of a position or pool not held changes nothing.
    engine.apply(vec![
        Change::Touched {
            owner: owner_key(9),
            position: position_key(9, 0),
            slot: 99,
            synced_us: 99,
        },
        Change::PoolTouched {
            pool: pool_key(3),
            slot: 99,
            synced_us: 99,
        },
    ]);
    assert_eq!(
        held(&mut engine, 1),
        vec![(position_key(1, 0), 10, 50), (position_key(1, 1), 9, 20)]
    );
}

#[test]
fn positions_synced_at_one_time_are_ordered_by_their_address_text() {
    let mut engine = Engine::new(10);
    for i in 0..3 {
        engine.upsert_pool(pool_state(i, Some(1_000_000)));
    }
    // Addresses whose bytes and base58 text sort differently: 0x08.. is
    // below 58^43, 43 characters with a high first digit; 0x10.. is above,
    // 44 characters starting with "2".
    let addresses = [
        Pubkey::new_from_array([0x10; 32]),
        Pubkey::new_from_array([0x01; 32]),
        Pubkey::new_from_array([0x08; 32]),
    ];
    let mut by_bytes = addresses;
    by_bytes.sort();
    let mut by_text = addresses;
    by_text.sort_by_key(|a| a.to_string());
    assert_ne!(by_bytes, by_text, "the case needs orders that differ");
    let positions = (addresses.iter().enumerate())
        .map(|(pool, address)| PositionState {
            address: *address,
            ..position(1, pool, 100, 50, 7)
        })
        .collect();
    engine.set_owner(owner_key(1), positions);
    let view = engine.view(&owner_key(1)).unwrap();
    let served: Vec<Pubkey> = view.positions.iter().map(|(p, _)| p.address).collect();
    assert_eq!(served, by_text.to_vec());
}
