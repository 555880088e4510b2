//! What the engine records of history (docs/design.md §12) while it leads: the
//! engine is the one that computes health factors, so it is the one that
//! judges which of them qualify (`domain::history::rule`), against each
//! owner's last recorded point (its baseline). Records are kept until the
//! actor takes them (`take_history`), stamps their time and queues them for
//! the database; the engine itself never waits on anything.
//!
//! The baseline of a resident owner is on the owner; an owner the engine no
//! longer holds (evicted, or left with no position) has it parked here, so
//! coming back is judged against the same point.

use ruint::aliases::U256;

use super::owners::Owner;
use super::pools::PoolTable;
use super::state::PoolState;
use super::{Engine, FastMap, Held, Slot};
use lendex_domain::history::liquidated::{Liquidation, LiquidationWatch, PositionChange};
use lendex_domain::history::rule::{Baseline, point_events, qualifies};
use lendex_domain::history::{Cause, EventKind, PriceSource};
use lendex_domain::pubkey::Pubkey;
use lendex_domain::risk::{Sums, account_sums};
use lendex_domain::wad::{
    Big, NO_DEBT_HEALTH_FACTOR, PositionAmounts, WAD, borrow_debt, deposit_tokens, value_wad,
};

/// One health point of an owner (its time is stamped when taken).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PointRecord {
    pub owner: Pubkey,
    /// The §11 provenance slot of the value.
    pub slot: u64,
    pub health_factor: u128,
    pub collateral: U256,
    pub debt: U256,
    pub cause: Cause,
}

/// One event of an account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRecord {
    pub kind: EventKind,
    pub owner: Pubkey,
    pub slot: u64,
    pub health_factor_before: u128,
    pub health_factor_after: u128,
    /// (debt pool, repaid, collateral pool, seized) of a `liquidated`.
    pub liquidation: Option<(Pubkey, u128, Pubkey, u128)>,
    /// The pools the owner held (the events' pool filter).
    pub pools: Vec<Pubkey>,
}

/// A change of a pool's oracle price, confidence or exponent: its copy's,
/// or its usable feed's (`source`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceRecord {
    pub pool: Pubkey,
    pub slot: u64,
    pub price: Option<i64>,
    pub conf: Option<u64>,
    pub expo: Option<i32>,
    pub source: PriceSource,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Point(PointRecord),
    /// Boxed: rare, and twice a point's size (a move's records are moved whole).
    Event(Box<EventRecord>),
    Price(PriceRecord),
    /// A sample of the market (taken by the caller, `market_sample`).
    Market(MarketSample),
}

/// A record with the time it happened (microseconds since the Unix epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamped {
    pub at_us: i64,
    pub record: Record,
}

/// A pool's oracle as a price row holds it.
pub type Oracle = (Option<i64>, Option<u64>, Option<i32>);

fn oracle_of(state: &PoolState) -> Oracle {
    (
        state.pricing.oracle_price,
        state.terms.oracle_conf,
        state.pricing.oracle_expo,
    )
}

/// The recorder's state, present while the engine records.
#[derive(Default)]
pub(super) struct Recorder {
    records: Vec<Record>,
    /// Baselines of owners not resident now.
    parked: FastMap<Pubkey, Baseline>,
    /// Each pool's last recorded oracle, and its feed's.
    oracles: FastMap<Pubkey, Oracle>,
    feed_oracles: FastMap<Pubkey, Oracle>,
    liquidations: LiquidationWatch,
    /// Position changes now come from a reload (cause `load`).
    loading: bool,
    /// Re-scored values that qualify, noted once the feed has published
    /// (`take_history`), or before anything else touches their owner.
    deferred: Vec<Option<Deferred>>,
}

impl Recorder {
    /// A pool's usable feed price at `slot`: recorded when it differs from
    /// the last one recorded of the pool.
    pub(super) fn note_feed(&mut self, pool: Pubkey, slot: u64, oracle: Oracle) {
        if self.feed_oracles.get(&pool) == Some(&oracle) {
            return;
        }
        self.feed_oracles.insert(pool, oracle);
        self.records.push(Record::Price(PriceRecord {
            pool,
            slot,
            price: oracle.0,
            conf: oracle.1,
            expo: oracle.2,
            source: PriceSource::Feed,
        }));
    }
}

/// A re-scored owner's value waiting to be noted.
struct Deferred {
    id: Slot,
    cause: Cause,
    valued: Valued,
}

/// An owner's value as a point records it: its collateral and debt values
/// (narrowed to 256 bits, zero exactly when zero) and the slot of the value.
#[derive(Debug, Clone, Copy)]
pub(super) struct Valued {
    collateral: U256,
    debt: U256,
    slot: u64,
}

/// What a past baseline holds, as read back from the database.
pub struct Baselines {
    pub owners: Vec<(Pubkey, Baseline)>,
    pub oracles: Vec<(Pubkey, Oracle)>,
    /// The last feed price recorded of each pool.
    pub feed_oracles: Vec<(Pubkey, Oracle)>,
}

/// An owner's sums at current prices (C, Cw and D over its priced pools),
/// and its value as a point records it.
pub(super) fn valued_of(pools: &PoolTable, positions: &[Held]) -> (Sums, Valued) {
    let held = || {
        positions
            .iter()
            .filter_map(|p| Some((p, &pools.get(p.pool)?.state)))
    };
    let sums = account_sums(held().map(|(p, pool)| (&pool.pricing, &p.amounts)));
    let slot = held().map(|(p, pool)| p.slot.max(pool.slot)).max();
    let valued = Valued {
        collateral: narrow(sums.collateral),
        debt: narrow(sums.debt),
        slot: slot.unwrap_or(0),
    };
    (sums, valued)
}

fn narrow(value: Big) -> U256 {
    value.saturating_to()
}

impl Engine {
    /// Whether history is being recorded.
    pub fn is_recording_history(&self) -> bool {
        self.history.is_some()
    }

    /// Starts recording against `past` (the last recorded point of every
    /// owner and the last price of every pool): what differs now is recorded
    /// at once with cause `load`, so a leader that takes over loses no
    /// crossing and records none twice.
    pub fn start_history(&mut self, past: Baselines) {
        let mut recorder = Recorder {
            oracles: past.oracles.into_iter().collect(),
            feed_oracles: past.feed_oracles.into_iter().collect(),
            ..Recorder::default()
        };
        for (owner, baseline) in past.owners {
            match self.owners.slot_of(&owner) {
                Some(id) => self.owners.get_mut(id).recorded = Some(baseline),
                None => {
                    recorder.parked.insert(owner, baseline);
                }
            }
        }
        self.history = Some(Box::new(recorder));
        let mut pools: Vec<PoolState> = self.pools().map(|p| p.state.clone()).collect();
        pools.sort_by_key(|p| p.address);
        for pool in &pools {
            self.note_oracle(pool);
            self.note_feed_price(&pool.address);
        }
        let mut resident: Vec<Slot> = self.owners.slots().collect();
        resident.sort_unstable();
        for id in resident {
            self.note_owner(id, Cause::Load, false, None);
        }
        // Owners held before and none now closed every position meanwhile
        // (when nothing was evicted, absent means no position).
        if self.owners.evictions() == 0 {
            let recorder = self.history.as_mut().expect("just set");
            let mut gone: Vec<(Pubkey, Baseline)> = recorder
                .parked
                .iter()
                .filter(|(_, b)| b.health_factor != NO_DEBT_HEALTH_FACTOR)
                .map(|(k, b)| (*k, *b))
                .collect();
            gone.sort_unstable_by_key(|(k, _)| *k);
            for (owner, last) in gone {
                self.note_gone(owner, Some(last), 0, Cause::Load);
            }
        }
    }

    /// Stops recording (this replica no longer leads): baselines and
    /// unrecorded records are forgotten; a later start reads them back.
    pub fn stop_history(&mut self) {
        if self.history.take().is_some() {
            for owner in self.owners.all_mut() {
                owner.recorded = None;
                owner.deferred = None;
            }
        }
    }

    /// What was recorded since the last call, in the order it happened.
    pub fn take_history(&mut self) -> Vec<Record> {
        self.settle_notes();
        self.history
            .as_mut()
            .map(|h| std::mem::take(&mut h.records))
            .unwrap_or_default()
    }

    /// Marks what the following position changes are: a reload's (cause
    /// `load`) or live ones.
    pub(super) fn history_loading(&mut self, loading: bool) {
        if let Some(h) = self.history.as_mut() {
            h.loading = loading;
        }
    }

    /// Why an owner's value moved with its positions, and whether they count
    /// as changed for the rule: a reload's re-reading changes nothing.
    pub(super) fn owner_change(&self, rows_changed: bool) -> (Cause, bool) {
        match &self.history {
            Some(h) if !h.loading && rows_changed => (Cause::Position, true),
            _ => (Cause::Load, false),
        }
    }

    /// A new slot takes the baseline this owner had when it was last held.
    pub(super) fn unpark(&mut self, key: &Pubkey) -> Option<Baseline> {
        self.history.as_mut()?.parked.remove(key)
    }

    /// A released owner's baseline is kept for its return.
    pub(super) fn park_baseline(&mut self, key: Pubkey, baseline: Baseline) {
        if let Some(h) = self.history.as_mut() {
            h.parked.insert(key, baseline);
        }
    }

    /// A baseline to compare a new value with, and whether a value qualifies:
    /// the re-score asks it on every core before any sums are taken.
    pub(super) fn history_qualifies(&self, owner: &Owner, hf: u128) -> bool {
        self.history.is_some() && qualifies(owner.recorded.map(|b| b.health_factor), hf, false)
    }

    /// A re-scored owner's value qualifies: it is noted later, off the path
    /// of the feed's publish. Nothing else changes the owner before: every
    /// other change notes it first (`settle_note`), as the next re-score does.
    pub(super) fn defer_note(&mut self, id: Slot, cause: Cause, valued: Valued) {
        let Some(history) = self.history.as_mut() else {
            return;
        };
        let owner = self.owners.get_mut(id);
        debug_assert!(owner.deferred.is_none(), "settled before re-scoring");
        owner.deferred = Some(history.deferred.len() as u32);
        history.deferred.push(Some(Deferred { id, cause, valued }));
    }

    /// Notes owner `id`'s deferred value, if one waits.
    pub(super) fn settle_note(&mut self, id: Slot) {
        let Some(at) = self.owners.get_mut(id).deferred.take() else {
            return;
        };
        let deferred = self
            .history
            .as_mut()
            .and_then(|h| h.deferred.get_mut(at as usize))
            .and_then(Option::take);
        if let Some(d) = deferred {
            self.note_owner(d.id, d.cause, false, Some(d.valued));
        }
    }

    /// Notes every deferred value, in the order the re-scores made them.
    pub(super) fn settle_notes(&mut self) {
        let Some(history) = self.history.as_mut() else {
            return;
        };
        if history.deferred.is_empty() {
            return;
        }
        for d in std::mem::take(&mut history.deferred).into_iter().flatten() {
            self.owners.get_mut(d.id).deferred = None;
            self.note_owner(d.id, d.cause, false, Some(d.valued));
        }
    }

    /// Records owner `id`'s current value if it qualifies, with the events
    /// it brings; its sums and slot when already taken (`valued`).
    pub(super) fn note_owner(
        &mut self,
        id: Slot,
        cause: Cause,
        positions_changed: bool,
        valued: Option<Valued>,
    ) {
        let Some(history) = self.history.as_mut() else {
            return;
        };
        let owner = self.owners.get(id);
        let last = owner.recorded;
        if !qualifies(last.map(|b| b.health_factor), owner.hf, positions_changed) {
            return;
        }
        let Valued {
            collateral,
            debt,
            slot,
        } = valued.unwrap_or_else(|| valued_of(&self.pools, &owner.positions).1);
        let now = Baseline::of(owner.hf, collateral == U256::ZERO, debt == U256::ZERO);
        history.records.push(Record::Point(PointRecord {
            owner: owner.key,
            slot,
            health_factor: owner.hf,
            collateral,
            debt,
            cause,
        }));
        let pools = || -> Vec<Pubkey> {
            let mut pools: Vec<Pubkey> = owner
                .positions
                .iter()
                .filter_map(|p| self.pools.address(p.pool))
                .collect();
            pools.sort_unstable();
            pools.dedup();
            pools
        };
        for kind in point_events(last, now) {
            history.records.push(Record::Event(Box::new(EventRecord {
                kind,
                owner: owner.key,
                slot,
                health_factor_before: last.map_or(now.health_factor, |l| l.health_factor),
                health_factor_after: now.health_factor,
                liquidation: None,
                pools: pools(),
            })));
        }
        self.owners.get_mut(id).recorded = Some(now);
    }

    /// An owner left with no position: its value is that of no debt, with
    /// nothing held (recorded if it qualifies).
    pub(super) fn note_gone(
        &mut self,
        key: Pubkey,
        last: Option<Baseline>,
        slot: u64,
        cause: Cause,
    ) {
        let Some(history) = self.history.as_mut() else {
            return;
        };
        let hf = NO_DEBT_HEALTH_FACTOR;
        if !qualifies(last.map(|b| b.health_factor), hf, true) {
            return;
        }
        let now = Baseline::of(hf, true, true);
        history.records.push(Record::Point(PointRecord {
            owner: key,
            slot,
            health_factor: hf,
            collateral: U256::ZERO,
            debt: U256::ZERO,
            cause,
        }));
        for kind in point_events(last, now) {
            history.records.push(Record::Event(Box::new(EventRecord {
                kind,
                owner: key,
                slot,
                health_factor_before: last.map_or(hf, |l| l.health_factor),
                health_factor_after: hf,
                liquidation: None,
                pools: Vec::new(),
            })));
        }
        history.parked.insert(key, now);
    }

    /// Records a pool's oracle when it differs from the last one recorded (a
    /// pool's first state counts as its first price row).
    pub(super) fn note_oracle(&mut self, state: &PoolState) {
        let Some(history) = self.history.as_mut() else {
            return;
        };
        let oracle = oracle_of(state);
        if history.oracles.get(&state.address) == Some(&oracle) {
            return;
        }
        history.oracles.insert(state.address, oracle);
        history.records.push(Record::Price(PriceRecord {
            pool: state.address,
            slot: state.slot,
            price: oracle.0,
            conf: oracle.1,
            expo: oracle.2,
            source: PriceSource::Pool,
        }));
    }

    /// After owner `id`'s positions changed from `before` (and its health
    /// factor from `before_hf`): a `liquidated` event if the new states
    /// complete one.
    pub(super) fn note_liquidation(
        &mut self,
        id: Slot,
        before_hf: u128,
        before: &[(Pubkey, PositionAmounts)],
    ) {
        if self.history.is_none() || self.history.as_ref().is_some_and(|h| h.loading) {
            return;
        }
        let owner = self.owners.get(id);
        let mut changes = Vec::new();
        for p in owner.positions.iter() {
            let Some((_, old)) = before.iter().find(|(a, _)| *a == p.address) else {
                continue;
            };
            let Some(pool) = self.pools.get(p.pool) else {
                continue;
            };
            if *old != p.amounts {
                changes.push(position_change(&pool.state, old, &p.amounts, p.slot));
            }
        }
        let (key, after_hf) = (owner.key, owner.hf);
        let history = self.history.as_mut().expect("checked above");
        let Some(Liquidation {
            slot,
            health_factor_before,
            health_factor_after,
            debt_pool,
            repaid,
            collateral_pool,
            seized,
        }) = history
            .liquidations
            .observe(key, before_hf, after_hf, &changes)
        else {
            return;
        };
        let mut pools = vec![debt_pool, collateral_pool];
        pools.sort_unstable();
        pools.dedup();
        history.records.push(Record::Event(Box::new(EventRecord {
            kind: EventKind::Liquidated,
            owner: key,
            slot,
            health_factor_before,
            health_factor_after,
            liquidation: Some((debt_pool, repaid, collateral_pool, seized)),
            pools,
        })));
    }

    /// The market as it stands (docs/design.md §12): the §10 sums at current prices.
    ///
    /// Read from the owners under water alone, not the book: only they have
    /// debt under water, and only they have bad debt while no pool weighs
    /// collateral above 1 WAD (C < D then means Cw < D). With every pool
    /// priced, every resident owner counts. Otherwise the book's full pass.
    pub fn market_sample(&self) -> MarketSample {
        let plain = self.pools().all(|p| {
            let pricing = &p.state.pricing;
            pricing.price().is_some() && pricing.liquidation_threshold_wad <= WAD
        });
        if !plain {
            return self.market_sample_of_book();
        }
        let (mut debt, mut bad) = (Big::ZERO, Big::ZERO);
        for (_, key) in self.unhealthy() {
            if let Some(owner) = self.owners.by_key(&key) {
                let (sums, _) = valued_of(&self.pools, &owner.positions);
                debt = debt.saturating_add(sums.debt);
                bad = bad.saturating_add(sums.bad_debt());
            }
        }
        let (deposits, borrows) = self.market_totals();
        MarketSample {
            owners: self.owner_count() as u64,
            under_water: self.unhealthy_count() as u64,
            at_risk: self.watched_below(AT_RISK_BELOW).len() as u64,
            debt_under_water: narrow(debt),
            bad_debt: narrow(bad),
            deposits,
            borrows,
        }
    }

    /// The market sample by a pass over the whole book (the risk lens at no
    /// shock).
    pub(super) fn market_sample_of_book(&self) -> MarketSample {
        let book = super::risk::shock(self, &[], 0).expect("a shock of no pool names no pool");
        let (deposits, borrows) = self.market_totals();
        MarketSample {
            owners: book.owners,
            under_water: book.liquidatable_before,
            at_risk: self.watched_below(AT_RISK_BELOW).len() as u64,
            debt_under_water: narrow(book.debt_value_wad_liquidatable_after),
            bad_debt: narrow(book.bad_debt_value_wad_after),
            deposits,
            borrows,
        }
    }

    /// Every pool's deposits and borrows at its price, summed: the pools'
    /// status totals (`PoolEntry::totals_value_wad`).
    fn market_totals(&self) -> (U256, U256) {
        let (mut deposits, mut borrows) = (Big::ZERO, Big::ZERO);
        for pool in self.pools() {
            let (d, b) = pool.totals_value_wad();
            deposits = deposits.saturating_add(d);
            borrows = borrows.saturating_add(b);
        }
        (narrow(deposits), narrow(borrows))
    }
}

/// The top of the market's at-risk band: 1.1 WAD.
pub const AT_RISK_BELOW: u128 = 11 * WAD / 10;

/// The market's figures at one moment (its time is stamped by the caller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarketSample {
    pub owners: u64,
    pub under_water: u64,
    pub at_risk: u64,
    pub debt_under_water: U256,
    pub bad_debt: U256,
    /// Every pool's total deposits at its price (the pools' status sum).
    pub deposits: U256,
    /// Every pool's total borrows at its price.
    pub borrows: U256,
}

/// One position's move as the liquidation inference reads it, valued at the
/// pool's current price and indexes.
fn position_change(
    pool: &PoolState,
    old: &PositionAmounts,
    new: &PositionAmounts,
    slot: u64,
) -> PositionChange {
    let pricing = &pool.pricing;
    let debt = |a: &PositionAmounts| {
        borrow_debt(
            a.borrow_principal,
            pricing.borrow_index_wad,
            a.borrow_idx_snap,
        )
    };
    let tokens = |a: &PositionAmounts| deposit_tokens(a.deposit_shares, pricing.deposit_index_wad);
    let debt_drop = debt(old).saturating_sub(debt(new));
    let token_drop = tokens(old).saturating_sub(tokens(new));
    let value = |amount: Big| match pricing.price() {
        Some((price, expo)) => value_wad(amount, price, expo, pricing.decimals),
        None => Big::ZERO,
    };
    PositionChange {
        slot,
        pool: pool.address,
        lost_principal: new.borrow_principal < old.borrow_principal,
        debt_drop: debt_drop.saturating_to(),
        debt_drop_value: value(debt_drop),
        lost_shares: new.deposit_shares < old.deposit_shares,
        token_drop: token_drop.saturating_to(),
        token_drop_value: value(token_drop),
    }
}
