//! From PostgreSQL to engine inputs: the named queries the cache reads, and each
//! row turned into a `PoolState` or a `PositionState`. The actor runs these off
//! its own thread and hands the results to the engine.

use std::collections::HashMap;

use deadpool_postgres::Pool;
use futures_util::{StreamExt, pin_mut};
use tokio_postgres::Row;

use super::engine::{PoolState, PositionState};
use crate::db::queries;
use crate::db::rows::{num, pool_pricing};
use crate::domain::liquidation::LiquidationTerms;
use crate::domain::pubkey::Pubkey;
use crate::domain::rates::RateModel;
use crate::domain::wad::PositionAmounts;
use crate::error::{ApiError, ApiResult};

/// Every owner's positions as loaded, with the health factor stored on its rows
/// when they all agree (else `None`: the rows need a write).
pub type Owners = HashMap<Pubkey, (Vec<PositionState>, Option<u128>)>;

/// The whole cluster, for a (re)load.
pub struct Everything {
    pub pools: Vec<PoolState>,
    pub owners: Owners,
}

/// What changed rows read back as.
pub struct ChangedRows {
    /// The pools asked for that still exist, and those that are gone.
    pub pools: Vec<PoolState>,
    pub removed_pools: Vec<Pubkey>,
    /// Every owner asked for (none left: removed), and every owner of a
    /// fallback pool.
    pub owners: Owners,
}

/// Pools, then every position streamed (a million rows never sit in memory
/// twice), in two halves read at once on two connections.
pub async fn load_everything(db: &Pool, cluster: &'static str) -> ApiResult<Everything> {
    let (first, second) = (db.get().await?, db.get().await?);
    let pools = first
        .query(queries::CACHE_ALL_POOLS, &[&cluster])
        .await?
        .iter()
        .filter_map(pool_state)
        .collect();
    let (zero, one) = (0i32, 1i32);
    let first_half: [&(dyn tokio_postgres::types::ToSql + Sync); 2] = [&cluster, &zero];
    let second_half: [&(dyn tokio_postgres::types::ToSql + Sync); 2] = [&cluster, &one];
    let (a, b) = futures_util::try_join!(
        first.query_raw(queries::CACHE_POSITIONS_HALF, first_half),
        second.query_raw(queries::CACHE_POSITIONS_HALF, second_half),
    )?;
    let rows = futures_util::stream::select(a, b);
    pin_mut!(rows);
    let mut owners = Owners::default();
    while let Some(row) = rows.next().await {
        group(&mut owners, &row?);
    }
    Ok(Everything { pools, owners })
}

/// Only what changed: the changed pools, the changed owners, and every owner of
/// the pools that had evicted members.
pub async fn load_changes(
    db: &Pool,
    cluster: &'static str,
    owners: &[Pubkey],
    pools: &[Pubkey],
    fallback_pools: &[Pubkey],
) -> ApiResult<ChangedRows> {
    let client = db.get().await?;
    let text = |keys: &[Pubkey]| keys.iter().map(Pubkey::to_string).collect::<Vec<_>>();
    let mut out = ChangedRows {
        pools: Vec::new(),
        removed_pools: Vec::new(),
        owners: Owners::default(),
    };
    if !pools.is_empty() {
        let stmt = client.prepare_cached(queries::CACHE_POOLS).await?;
        out.pools = client
            .query(&stmt, &[&cluster, &text(pools)])
            .await?
            .iter()
            .filter_map(pool_state)
            .collect();
        out.removed_pools = pools
            .iter()
            .filter(|p| !out.pools.iter().any(|s| s.address == **p))
            .copied()
            .collect();
    }
    if !owners.is_empty() {
        for owner in owners {
            out.owners.entry(*owner).or_default();
        }
        let stmt = client
            .prepare_cached(queries::CACHE_OWNERS_POSITIONS)
            .await?;
        for row in client.query(&stmt, &[&cluster, &text(owners)]).await? {
            group(&mut out.owners, &row);
        }
    }
    for pool in fallback_pools {
        let stmt = client
            .prepare_cached(queries::CACHE_POOL_OWNERS_POSITIONS)
            .await?;
        for row in client.query(&stmt, &[&cluster, &pool.to_string()]).await? {
            group(&mut out.owners, &row);
        }
    }
    Ok(out)
}

fn group(owners: &mut Owners, row: &Row) {
    let Some((owner, position, stored)) = position_state(row) else {
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

/// A pool row of CACHE_*_POOLS; `None` (logged) when it cannot be used.
fn pool_state(row: &Row) -> Option<PoolState> {
    let parsed = (|| -> ApiResult<PoolState> {
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
            terms: LiquidationTerms {
                close_factor_wad: num(row, "close_factor_wad")?,
                liquidation_bonus_wad: num(row, "liquidation_bonus_wad")?,
                protocol_liq_fee_wad: num(row, "protocol_liq_fee_wad")?,
                oracle_conf: row
                    .get::<_, Option<&str>>("oracle_conf")
                    .map(str::parse)
                    .transpose()
                    .map_err(|_| ApiError::Internal)?,
            },
        })
    })();
    if parsed.is_err() {
        tracing::warn!(
            pool = row.get::<_, &str>("pool_address"),
            "pool row not usable by the cache; skipped"
        );
    }
    parsed.ok()
}

/// A position row of CACHE_*_POSITIONS: its owner, the position, the stored
/// health factor; `None` (logged) when it cannot be used.
fn position_state(row: &Row) -> Option<(Pubkey, PositionState, u128)> {
    let parsed = (|| -> ApiResult<(Pubkey, PositionState, u128)> {
        let position = PositionState {
            address: key(row.get("position_address"))?,
            pool: key(row.get("pool_address"))?,
            amounts: PositionAmounts {
                deposit_shares: num(row, "deposit_shares")?,
                borrow_principal: num(row, "borrow_principal")?,
                borrow_idx_snap: num(row, "borrow_idx_snap")?,
            },
            deposit_idx_snap: num(row, "deposit_idx_snap")?,
            original_deposit: num(row, "original_deposit")?,
            synced_us: row
                .get::<_, chrono::DateTime<chrono::Utc>>("last_synced_at")
                .timestamp_micros(),
        };
        Ok((
            key(row.get("owner"))?,
            position,
            num(row, "health_factor_wad")?,
        ))
    })();
    if parsed.is_err() {
        tracing::warn!(
            position = row.get::<_, &str>("position_address"),
            "position row not usable by the cache; skipped"
        );
    }
    parsed.ok()
}

fn key(s: &str) -> ApiResult<Pubkey> {
    s.parse().map_err(|_| ApiError::Internal)
}
