//! What the engine holds: each pool's state and what is derived from it, and
//! each position, as given (`PositionState`) and as held (`Held`).

use super::{FastSet, PoolId, Slot};
use lendex_domain::liquidation::LiquidationTerms;
use lendex_domain::pubkey::Pubkey;
use lendex_domain::rates::RateModel;
use lendex_domain::wad::{Big, PoolPricing, PositionAmounts, value_wad};

/// What the engine knows of a pool (the cache's columns of `pools`).
#[derive(Debug, Clone, PartialEq)]
pub struct PoolState {
    pub address: Pubkey,
    pub symbol: Option<String>,
    pub pricing: PoolPricing,
    pub rates: RateModel,
    pub total_deposits: u64,
    pub total_borrows: u64,
    /// The pool's on-chain last update (unix seconds): oracle freshness.
    pub last_update_ts: i64,
    /// Close factor, bonus, protocol fee and oracle confidence (quotes, §8).
    pub terms: LiquidationTerms,
    /// The context slot of the chain read the row holds.
    pub slot: u64,
    /// The Pyth feed account the pool names (`pyth_price_feed`).
    pub feed: Option<Pubkey>,
    /// In the feed view only: valued at a feed that differs from the pool's
    /// own price, so the pool must be cranked for the chain to agree
    /// (docs/design.md §17).
    pub crank: bool,
}

/// A pool as held: its state and what is derived from it once per change.
pub struct PoolEntry {
    pub state: PoolState,
    pub supply_apy: f64,
    pub borrow_apy: f64,
    /// The address in base58, once: every feed frame names its pools.
    pub address_text: Box<str>,
    /// Slots of resident owners with a position in this pool.
    pub(super) members: FastSet<Slot>,
    /// Some owner of this pool was evicted: a change must also re-score from the database.
    pub(super) has_evicted_members: bool,
}

/// One position of an owner (the cache's columns of `positions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PositionState {
    pub address: Pubkey,
    pub pool: Pubkey,
    pub amounts: PositionAmounts,
    pub deposit_idx_snap: u128,
    pub original_deposit: u64,
    /// last_synced_at in microseconds since the epoch.
    pub synced_us: i64,
    /// The context slot of the chain read the row holds.
    pub slot: u64,
}

/// A position as held: its state with the pool as a dense id instead of a
/// 32-byte key (a million positions are 32 MB less), the fields a re-score
/// reads first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub amounts: PositionAmounts,
    pub(super) pool: PoolId,
    pub address: Pubkey,
    pub deposit_idx_snap: u128,
    pub original_deposit: u64,
    /// last_synced_at in microseconds since the epoch.
    pub synced_us: i64,
    pub slot: u64,
}

impl Held {
    pub(super) fn new(state: PositionState, pool: PoolId) -> Self {
        Held {
            amounts: state.amounts,
            pool,
            address: state.address,
            deposit_idx_snap: state.deposit_idx_snap,
            original_deposit: state.original_deposit,
            synced_us: state.synced_us,
            slot: state.slot,
        }
    }

    /// The position as the engine was given it, with its pool's key.
    pub fn state(&self, pool: Pubkey) -> PositionState {
        PositionState {
            address: self.address,
            pool,
            amounts: self.amounts,
            deposit_idx_snap: self.deposit_idx_snap,
            original_deposit: self.original_deposit,
            synced_us: self.synced_us,
            slot: self.slot,
        }
    }
}

impl PoolEntry {
    /// The oracle-stale rule, the one place it is written: a priced pool whose
    /// on-chain last update is older than `max_age` seconds at `now`.
    pub fn oracle_stale(&self, now: i64, max_age: i64) -> bool {
        self.state.pricing.oracle_price.is_some() && now - self.state.last_update_ts > max_age
    }

    /// The pool's total deposits and total borrows in USD (WAD), valued as §3
    /// values an account's deposits and debt: zero while the pool has no price.
    /// The one valuation behind the pools' status and the market's history.
    pub fn totals_value_wad(&self) -> (Big, Big) {
        let pricing = &self.state.pricing;
        let value = |amount: u64| match pricing.price() {
            Some((price, expo)) => value_wad(Big::from(amount), price, expo, pricing.decimals),
            None => Big::ZERO,
        };
        (
            value(self.state.total_deposits),
            value(self.state.total_borrows),
        )
    }
}
