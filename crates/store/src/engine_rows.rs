//! From PostgreSQL to engine inputs: the named queries the health cache reads,
//! and each row turned into a `PoolState` or a `PositionState`. The cache's
//! actor runs these off its own thread and hands the results to the engine.

use std::collections::HashMap;

use deadpool_postgres::Pool;
use futures_util::{StreamExt, pin_mut};
use tokio_postgres::Row;

use crate::error::{DbError, DbResult};
use crate::numeric::NumericU128;
use crate::queries;
use crate::rows::{num, pool_pricing};
use lendex_domain::liquidation::LiquidationTerms;
use lendex_domain::pubkey::Pubkey;
use lendex_domain::pyth::{FeedPrice, FeedStatus};
use lendex_domain::rates::RateModel;
use lendex_domain::wad::PositionAmounts;
use lendex_engine::oracle::FeedReading;
use lendex_engine::{PoolState, PositionState};

/// Every owner's positions as loaded, with the health factor stored on its rows
/// when they all agree (else `None`: the rows need a write).
pub type Owners = HashMap<Pubkey, (Vec<PositionState>, Option<u128>), foldhash::fast::RandomState>;

/// The whole cluster, for a (re)load.
pub struct IndexSnapshot {
    pub pools: Vec<PoolState>,
    pub owners: Owners,
    /// The change log's clock in the same snapshot.
    pub clock: crate::change_clock::Clock,
    /// What the processed overlay holds, in the same snapshot (when asked).
    pub overlay: Vec<lendex_engine::processed::OverlayWrite>,
    /// Every feed account's reading (docs/design.md §17).
    pub feeds: Vec<(Pubkey, FeedReading)>,
}

/// Pools, then every position streamed (a million rows never sit in memory
/// twice), with the change log's clock, all in one snapshot: the state is exactly
/// that of the clock's tick, and the change log takes over after it.
pub async fn load_snapshot(
    db: &Pool,
    cluster: &'static str,
    overlay: bool,
) -> DbResult<IndexSnapshot> {
    let mut client = db.get().await?;
    let tx = client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await?;
    let clock = crate::change_clock::clock(&tx).await?;
    let pools = tx
        .query(queries::CACHE_ALL_POOLS, &[&cluster])
        .await?
        .iter()
        .filter_map(pool_state)
        .collect();
    let feeds = tx
        .query(queries::CACHE_ALL_FEEDS, &[&cluster])
        .await?
        .iter()
        .filter_map(feed_reading)
        .collect();
    let mut owners = Owners::default();
    let mut pools_seen = PoolKeys::default();
    // In two halves by owner (owners never span halves), one after the other
    // on the snapshot's one connection.
    for half in [0i32, 1] {
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 2] = [&cluster, &half];
        let rows = tx.query_raw(queries::CACHE_POSITIONS_HALF, params).await?;
        pin_mut!(rows);
        while let Some(row) = rows.next().await {
            group(&mut owners, &mut pools_seen, &row?);
        }
    }
    let overlay = match overlay {
        true => crate::overlay::load(&*tx, cluster).await?,
        false => Vec::new(),
    };
    tx.commit().await?;
    Ok(IndexSnapshot {
        pools,
        owners,
        clock,
        overlay,
        feeds,
    })
}

/// Owners read back as they are now (the engine evicted them): these owners,
/// and every owner of the pools that had evicted members.
pub async fn load_owners(
    db: &Pool,
    cluster: &'static str,
    owners: &[Pubkey],
    fallback_pools: &[Pubkey],
) -> DbResult<Owners> {
    let client = db.get().await?;
    let mut out = Owners::default();
    let mut pools_seen = PoolKeys::default();
    if !owners.is_empty() {
        for owner in owners {
            out.entry(*owner).or_default();
        }
        let text: Vec<String> = owners.iter().map(Pubkey::to_string).collect();
        let stmt = client
            .prepare_cached(queries::CACHE_OWNERS_POSITIONS)
            .await?;
        for row in client.query(&stmt, &[&cluster, &text]).await? {
            group(&mut out, &mut pools_seen, &row);
        }
    }
    for pool in fallback_pools {
        let stmt = client
            .prepare_cached(queries::CACHE_POOL_OWNERS_POSITIONS)
            .await?;
        for row in client.query(&stmt, &[&cluster, &pool.to_string()]).await? {
            group(&mut out, &mut pools_seen, &row);
        }
    }
    Ok(out)
}

fn group(owners: &mut Owners, pools: &mut PoolKeys, row: &Row) {
    let Some((owner, position, stored)) = position_state(row, pools) else {
        return;
    };
    let entry = owners.entry(owner).or_insert((Vec::new(), Some(stored)));
    if entry.0.is_empty() {
        entry.1 = Some(stored);
    } else if entry.1 != Some(stored) {
        entry.1 = None;
    }
    entry.0.push(position);
}

/// A pool row of CACHE_*_POOLS (and of the pool writes' RETURNING); `None`
/// (logged) when it cannot be used.
pub fn pool_state(row: &Row) -> Option<PoolState> {
    let parsed = (|| -> DbResult<PoolState> {
        Ok(PoolState {
            address: key(row.get("pool_address"))?,
            symbol: row.get("symbol"),
            pricing: pool_pricing(row)?,
            rates: RateModel {
                base_rate_wad: num(row, "base_rate_wad")?,
                optimal_util_wad: num(row, "optimal_util_wad")?,
                slope1_wad: num(row, "slope1_wad")?,
                slope2_wad: num(row, "slope2_wad")?,
                reserve_factor_wad: num(row, "reserve_factor_wad")?,
            },
            total_deposits: num(row, "total_deposits")?,
            total_borrows: num(row, "total_borrows")?,
            last_update_ts: row.get("last_update_ts"),
            slot: slot(row.get("slot")),
            feed: row
                .get::<_, Option<&str>>("pyth_price_feed")
                .map(str::parse)
                .transpose()
                .map_err(DbError::failed)?,
            crank: false,
            terms: LiquidationTerms {
                close_factor_wad: num(row, "close_factor_wad")?,
                liquidation_bonus_wad: num(row, "liquidation_bonus_wad")?,
                protocol_liq_fee_wad: num(row, "protocol_liq_fee_wad")?,
                oracle_conf: row
                    .get::<_, Option<&str>>("oracle_conf")
                    .map(str::parse)
                    .transpose()
                    .map_err(DbError::failed)?,
            },
        })
    })();
    if let Err(e) = &parsed {
        tracing::warn!(
            pool = row.get::<_, &str>("pool_address"),
            error = %e,
            "pool row not usable by the cache; skipped"
        );
    }
    parsed.ok()
}

/// A feed row (`feed_columns!`): the account and its reading; `None`
/// (logged) when it cannot be used.
pub fn feed_reading(row: &Row) -> Option<(Pubkey, FeedReading)> {
    let parsed = (|| -> DbResult<(Pubkey, FeedReading)> {
        let status: &str = row.get("status");
        let status = FeedStatus::parse(status)
            .ok_or_else(|| DbError::failed(format!("unknown feed status {status}")))?;
        let u64_of = |column: &str| -> DbResult<Option<u64>> {
            row.get::<_, Option<&str>>(column)
                .map(str::parse)
                .transpose()
                .map_err(DbError::failed)
        };
        let (conf, posted_slot) = (u64_of("conf")?, u64_of("posted_slot")?);
        let price = match (
            row.get("price"),
            conf,
            row.get("exponent"),
            row.get("publish_time"),
        ) {
            (Some(price), Some(conf), Some(exponent), Some(publish_time)) => Some(FeedPrice {
                price,
                conf,
                exponent,
                publish_time,
                posted_slot: posted_slot.unwrap_or(0),
            }),
            _ => None,
        };
        let reading = FeedReading {
            status,
            price,
            slot: slot(row.get("slot")),
        };
        Ok((key(row.get("feed_address"))?, reading))
    })();
    if let Err(e) = &parsed {
        tracing::warn!(
            feed = row.get::<_, &str>("feed_address"),
            error = %e,
            "feed row not usable by the cache; skipped"
        );
    }
    parsed.ok()
}

/// Columns of `cache_position_select!`, by position: a million rows are read
/// at a cold start, and a lookup by name searches the columns each time.
mod col {
    pub(super) const POSITION: usize = 0;
    pub(super) const POOL: usize = 1;
    pub(super) const OWNER: usize = 2;
    pub(super) const DEPOSIT_SHARES: usize = 3;
    pub(super) const BORROW_PRINCIPAL: usize = 4;
    pub(super) const DEPOSIT_IDX_SNAP: usize = 5;
    pub(super) const BORROW_IDX_SNAP: usize = 6;
    pub(super) const ORIGINAL_DEPOSIT: usize = 7;
    pub(super) const HEALTH_FACTOR: usize = 8;
    pub(super) const SYNCED_AT: usize = 9;
    pub(super) const SLOT: usize = 10;
}

/// Pool addresses already decoded: a handful of pools across a million rows,
/// so a row's pool is found by its text rather than decoded from base58.
#[derive(Default)]
pub struct PoolKeys(Vec<(String, Pubkey)>);

impl PoolKeys {
    fn get(&mut self, text: &str) -> DbResult<Pubkey> {
        if let Some((_, key)) = self.0.iter().find(|(t, _)| t == text) {
            return Ok(*key);
        }
        let parsed = key(text)?;
        // Bounded: past this many, decode (a cache, not a registry).
        if self.0.len() < 64 {
            self.0.push((text.to_string(), parsed));
        }
        Ok(parsed)
    }
}

/// A position row of CACHE_*_POSITIONS (and of the position writes'
/// RETURNING): its owner, the position, the stored health factor; `None`
/// (logged) when it cannot be used.
pub fn position_state(row: &Row, pools: &mut PoolKeys) -> Option<(Pubkey, PositionState, u128)> {
    let parsed = (|| -> DbResult<(Pubkey, PositionState, u128)> {
        let position = PositionState {
            address: key(row.get(col::POSITION))?,
            pool: pools.get(row.get(col::POOL))?,
            amounts: PositionAmounts {
                deposit_shares: whole(row, col::DEPOSIT_SHARES)?,
                borrow_principal: whole(row, col::BORROW_PRINCIPAL)?,
                borrow_idx_snap: whole(row, col::BORROW_IDX_SNAP)?,
            },
            deposit_idx_snap: whole(row, col::DEPOSIT_IDX_SNAP)?,
            original_deposit: whole(row, col::ORIGINAL_DEPOSIT)?,
            synced_us: row
                .get::<_, chrono::DateTime<chrono::Utc>>(col::SYNCED_AT)
                .timestamp_micros(),
            slot: slot(row.get(col::SLOT)),
        };
        Ok((
            key(row.get(col::OWNER))?,
            position,
            whole(row, col::HEALTH_FACTOR)?,
        ))
    })();
    if let Err(e) = &parsed {
        tracing::warn!(
            position = row.get::<_, &str>(col::POSITION),
            error = %e,
            "position row not usable by the cache; skipped"
        );
    }
    parsed.ok()
}

/// A NUMERIC column of a position row, exact, in the field's integer type.
fn whole<T: TryFrom<u128>>(row: &Row, column: usize) -> DbResult<T> {
    let NumericU128(value) = row.try_get(column).map_err(DbError::failed)?;
    T::try_from(value).map_err(|_| {
        DbError::failed(format!(
            "stored number {value} out of range (column {column})"
        ))
    })
}

fn key(s: &str) -> DbResult<Pubkey> {
    s.parse()
        .map_err(|e| DbError::failed(format!("stored address {s:?}: {e}")))
}

/// A stored slot (bigint, never negative: a CHECK) as the chain's u64.
fn slot(stored: i64) -> u64 {
    u64::try_from(stored).unwrap_or(0)
}
