//! Writes of chain-derived rows: pools and positions. Each carries the context
//! slot of the read it came from, and the named queries refuse to let an older
//! read overwrite a newer row. Each returns what it changed, as the health
//! engine applies it (`IndexWrite`).

use deadpool_postgres::Transaction;
use futures_util::future::BoxFuture;
use serde_json::json;
use tokio_postgres::types::ToSql;

use super::engine_rows::{PoolKeys, pool_state, position_state};
use super::queries;
use super::writes::{Lane, WriteCommand, insert_audit};
use crate::error::{DbError, DbResult};
use lendex_domain::accounts::LendingPool;
pub use lendex_domain::index_writes::{
    AccountWrite, RefreshPoolPositions, RegisterPool, SyncFeed, SyncPool, SyncPosition,
};
use lendex_domain::pubkey::Pubkey;
use lendex_engine::{Change, PoolState};

/// The 27 parameters of a pool's chain state ($1..$27 of REGISTER_POOL and
/// UPDATE_POOL_STATE), as owned values.
struct PoolStateParams {
    cluster: &'static str,
    pool_address: String,
    paused: bool,
    numbers: [String; 6],
    last_update_ts: i64,
    ratios: [String; 10],
    flash_fee_bps: i32,
    oracle_price: Option<i64>,
    oracle_conf: Option<String>,
    oracle_expo: Option<i32>,
    pyth_price_feed: Option<String>,
    slot: i64,
    symbol: Option<String>,
}

impl PoolStateParams {
    fn new(
        cluster: &'static str,
        pool_address: &str,
        pool: &LendingPool,
        slot: u64,
        symbol: Option<&str>,
    ) -> Self {
        PoolStateParams {
            cluster,
            pool_address: pool_address.to_string(),
            paused: pool.paused,
            numbers: [
                pool.total_deposits.to_string(),
                pool.total_borrows.to_string(),
                pool.accumulated_fees.to_string(),
                pool.total_deposit_shares.to_string(),
                pool.deposit_index_wad.to_string(),
                pool.borrow_index_wad.to_string(),
            ],
            last_update_ts: pool.last_update_ts,
            ratios: [
                pool.ltv_wad.to_string(),
                pool.liquidation_threshold_wad.to_string(),
                pool.liquidation_bonus_wad.to_string(),
                pool.protocol_liq_fee_wad.to_string(),
                pool.reserve_factor_wad.to_string(),
                pool.close_factor_wad.to_string(),
                pool.base_rate_wad.to_string(),
                pool.optimal_util_wad.to_string(),
                pool.slope1_wad.to_string(),
                pool.slope2_wad.to_string(),
            ],
            flash_fee_bps: i32::from(pool.flash_fee_bps),
            oracle_price: pool.oracle_price,
            oracle_conf: pool.oracle_conf.map(|c| c.to_string()),
            oracle_expo: pool.oracle_expo,
            pyth_price_feed: pool.pyth_price_feed.map(|k| k.to_string()),
            slot: slot_param(slot),
            symbol: symbol.map(str::to_string),
        }
    }

    fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        let mut p: Vec<&(dyn ToSql + Sync)> = vec![&self.cluster, &self.pool_address, &self.paused];
        p.extend(self.numbers.iter().map(|n| n as &(dyn ToSql + Sync)));
        p.push(&self.last_update_ts);
        p.extend(self.ratios.iter().map(|n| n as &(dyn ToSql + Sync)));
        p.extend([
            &self.flash_fee_bps as &(dyn ToSql + Sync),
            &self.oracle_price,
            &self.oracle_conf,
            &self.oracle_expo,
            &self.pyth_price_feed,
            &self.slot,
            &self.symbol,
        ]);
        p
    }
}

/// Slots and write versions are u64 on chain and bigint in PostgreSQL; real
/// ones are far below i64 max.
fn slot_param(slot: u64) -> i64 {
    i64::try_from(slot).unwrap_or(i64::MAX)
}

/// A write of chain-derived rows whose output also says whether it changed
/// the index: only then does the writer's engine catch up with the change
/// log before the write is answered.
pub trait IndexWrite: WriteCommand {
    /// Whether a committed write's output reports a change.
    fn changed(output: &Self::Output) -> bool;
}

/// What a registration did: the pool as stored when this call created it, and
/// the symbol in the index either way.
#[derive(Debug, Clone)]
pub struct Registered {
    pub created: Option<PoolState>,
    pub symbol: Option<String>,
}

impl WriteCommand for RegisterPool {
    type Output = Registered;
    const LANE: Lane = Lane::Admin;
    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<Registered>> {
        Box::pin(async move {
            let state = PoolStateParams::new(
                self.cluster,
                &self.pool_address,
                &self.pool,
                self.slot,
                self.symbol.as_deref(),
            );
            let identity = (
                self.pool.token_mint.to_string(),
                self.pool.authority.to_string(),
                self.pool.vault.to_string(),
                i16::from(self.pool.pool_bump),
                i16::from(self.pool.authority_bump),
                i16::from(self.pool.vault_bump),
                i16::from(self.decimals),
            );
            let mut params = state.params();
            params.extend([
                &identity.0 as &(dyn ToSql + Sync),
                &identity.1,
                &identity.2,
                &identity.3,
                &identity.4,
                &identity.5,
                &identity.6,
                &self.created_by,
                &self.init_signature,
            ]);
            let created = tx
                .query_opt(queries::REGISTER_POOL, &params)
                .await?
                .as_ref()
                .and_then(pool_state);
            let symbol = match &created {
                Some(_) => self.symbol.clone(),
                None => tx
                    .query_opt(queries::POOL_SYMBOL, &[&self.cluster, &self.pool_address])
                    .await?
                    .and_then(|row| row.get::<_, Option<String>>(0)),
            };
            let mut details = json!({
                "token_mint": identity.0,
                "symbol": symbol,
                "decimals": self.decimals,
                "init_signature": self.init_signature,
                "created": created.is_some(),
                "slot": self.slot,
            });
            if self.symbol.is_some() && self.symbol != symbol {
                // Sent again with another symbol: recorded as not applied.
                details["symbol_not_applied"] = json!(self.symbol);
            }
            insert_audit(
                tx,
                &self.created_by,
                "init_pool",
                &self.pool_address,
                &details,
            )
            .await?;
            Ok(Registered { created, symbol })
        })
    }
}

impl IndexWrite for RegisterPool {
    fn changed(output: &Registered) -> bool {
        output.created.is_some()
    }
}

impl WriteCommand for SyncPool {
    type Output = Option<PoolState>;
    const LANE: Lane = Lane::Index;
    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<Option<PoolState>>> {
        let guard = if self.catch_up {
            Guard::OverOlderReads
        } else {
            Guard::Newer(self.write_version)
        };
        Box::pin(update_pool_state(
            tx,
            guard,
            self.cluster,
            &self.pool_address,
            &self.pool,
            self.slot,
            self.symbol.as_deref(),
        ))
    }
}

impl IndexWrite for SyncPool {
    fn changed(output: &Option<PoolState>) -> bool {
        output.is_some()
    }
}

/// The writes a chain source delivered together for one slot, in one
/// transaction: one change of the index (one tick of the change log), so the
/// feed and history see the slot's outcome, not the order its accounts
/// arrived in (docs/design.md, "Chain sources"). Each write keeps its own
/// order rule; the output says, in order, which were written.
#[derive(Debug)]
pub struct SlotWrites {
    pub writes: Vec<AccountWrite>,
}

impl WriteCommand for SlotWrites {
    type Output = Vec<bool>;
    const LANE: Lane = Lane::Index;
    fn rows(&self) -> usize {
        self.writes.len().max(1)
    }
    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<Vec<bool>>> {
        Box::pin(async move {
            let mut written = Vec::with_capacity(self.writes.len());
            for write in &self.writes {
                written.push(match write {
                    AccountWrite::Pool(w) => w.apply(tx).await?.is_some(),
                    AccountWrite::Position(w) => !w.apply(tx).await?.is_empty(),
                    AccountWrite::Feed(w) => w.apply(tx).await?,
                });
            }
            Ok(written)
        })
    }
}

impl IndexWrite for SlotWrites {
    fn changed(output: &Vec<bool>) -> bool {
        output.iter().any(|w| *w)
    }
}

impl WriteCommand for SyncFeed {
    /// Whether it was written (false: the row holds a newer read).
    type Output = bool;
    const LANE: Lane = Lane::Index;
    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<bool>> {
        Box::pin(async move {
            let query = match self.catch_up {
                true => queries::UPSERT_ORACLE_FEED_CATCH_UP,
                false => queries::UPSERT_ORACLE_FEED,
            };
            let p = self.price;
            let feed = self.feed.to_string();
            let params: [&(dyn ToSql + Sync); 10] = [
                &self.cluster,
                &feed,
                &self.status.as_str(),
                &p.map(|p| p.price),
                &p.map(|p| p.conf.to_string()),
                &p.map(|p| p.exponent),
                &p.map(|p| p.publish_time),
                &p.map(|p| p.posted_slot.to_string()),
                &slot_param(self.slot),
                &self.write_version.map(slot_param),
            ];
            let stmt = tx.prepare_cached(query).await?;
            Ok(tx.query_opt(&stmt, &params).await?.is_some())
        })
    }
}

impl IndexWrite for SyncFeed {
    fn changed(written: &bool) -> bool {
        *written
    }
}

/// Which stored rows a pool write may overwrite.
#[derive(Clone, Copy)]
enum Guard {
    /// Older reads only (the reconciliation).
    OverOlderReads,
    /// Older slots, and within the slot: any write for a read (None), older
    /// writes for a streamed write of that version.
    Newer(Option<u64>),
}

/// The slot-guarded refresh of a pool row: the row as stored, or `None` when
/// it holds a newer read.
async fn update_pool_state(
    tx: &Transaction<'_>,
    guard: Guard,
    cluster: &'static str,
    pool_address: &str,
    pool: &LendingPool,
    slot: u64,
    symbol: Option<&str>,
) -> DbResult<Option<PoolState>> {
    let state = PoolStateParams::new(cluster, pool_address, pool, slot, symbol);
    let mut params = state.params();
    let (query, version) = match guard {
        Guard::OverOlderReads => (queries::UPDATE_POOL_STATE_CATCH_UP, None),
        Guard::Newer(version) => (queries::UPDATE_POOL_STATE, version.map(slot_param)),
    };
    if let Guard::Newer(_) = guard {
        params.push(&version);
    }
    let stmt = tx.prepare_cached(query).await?;
    Ok(tx
        .query_opt(&stmt, &params)
        .await?
        .as_ref()
        .and_then(pool_state))
}

impl WriteCommand for SyncPosition {
    type Output = Vec<Change>;
    const LANE: Lane = Lane::Index;
    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<Vec<Change>>> {
        Box::pin(async move {
            let mut changes = Vec::new();
            if let Some(pool) = &self.pool {
                // The pool's state comes from a read made with the position's.
                let written = update_pool_state(
                    tx,
                    Guard::Newer(None),
                    self.cluster,
                    &self.pool_address,
                    pool,
                    self.slot,
                    None,
                )
                .await?;
                changes.extend(written.map(Change::Pool));
            }
            let slot = slot_param(self.slot);
            let version = self.write_version.map(slot_param);
            match &self.position {
                Some(p) => {
                    let stmt = tx.prepare_cached(queries::UPSERT_POSITION).await?;
                    let row = tx
                        .query_opt(
                            &stmt,
                            &[
                                &self.cluster,
                                &self.position_address,
                                &self.pool_address,
                                &p.owner.to_string(),
                                &p.deposit_shares.to_string(),
                                &p.borrow_principal.to_string(),
                                &p.deposit_idx_snap.to_string(),
                                &p.borrow_idx_snap.to_string(),
                                &p.original_deposit.to_string(),
                                &slot,
                                &version,
                            ],
                        )
                        .await?;
                    changes.extend(row.as_ref().and_then(position_change));
                }
                None => {
                    let stmt = tx.prepare_cached(queries::DELETE_POSITION).await?;
                    let gone = tx
                        .query_opt(&stmt, &[&self.cluster, &self.position_address, &slot])
                        .await?;
                    if gone.is_some() {
                        changes.push(Change::Removed {
                            owner: self.owner,
                            position: key(&self.position_address)?,
                            slot: self.slot,
                        });
                    }
                }
            }
            Ok(changes)
        })
    }
}

impl IndexWrite for SyncPosition {
    fn changed(output: &Vec<Change>) -> bool {
        !output.is_empty()
    }
}

/// A position row as the engine applies it.
fn position_change(row: &tokio_postgres::Row) -> Option<Change> {
    let (owner, position, row_health_factor) = position_state(row, &mut PoolKeys::default())?;
    Some(Change::Position {
        owner,
        position,
        row_health_factor,
    })
}

fn key(text: &str) -> DbResult<Pubkey> {
    text.parse()
        .map_err(|e| DbError::failed(format!("stored address {text}: {e}")))
}

/// What a pool's reconciliation wrote: how many positions it upserted and
/// removed, and the changes among them (new rows, other data, removals).
#[derive(Debug, Default)]
pub struct Reconciled {
    pub written: u64,
    pub removed: u64,
    pub changes: Vec<Change>,
    /// Rows were stamped with the read's slot and time (a logged touch).
    pub touched: bool,
}

impl WriteCommand for RefreshPoolPositions {
    type Output = Reconciled;
    const LANE: Lane = Lane::Index;
    fn rows(&self) -> usize {
        self.positions.len().max(1)
    }
    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<Reconciled>> {
        Box::pin(async move {
            let n = self.positions.len();
            let mut cols: [Vec<String>; 7] = std::array::from_fn(|_| Vec::with_capacity(n));
            for (address, p) in &self.positions {
                cols[0].push(address.clone());
                cols[1].push(p.owner.to_string());
                cols[2].push(p.deposit_shares.to_string());
                cols[3].push(p.borrow_principal.to_string());
                cols[4].push(p.deposit_idx_snap.to_string());
                cols[5].push(p.borrow_idx_snap.to_string());
                cols[6].push(p.original_deposit.to_string());
            }
            let slot = slot_param(self.slot);
            tx.execute(queries::BEGIN_POOL_TOUCH, &[&self.pool_address])
                .await?;
            let rows = tx
                .query(
                    queries::UPSERT_POSITIONS_BULK,
                    &[
                        &self.cluster,
                        &self.pool_address,
                        &slot,
                        &cols[0],
                        &cols[1],
                        &cols[2],
                        &cols[3],
                        &cols[4],
                        &cols[5],
                        &cols[6],
                    ],
                )
                .await?;
            let mut out = Reconciled::default();
            let mut pools = PoolKeys::default();
            for row in &rows {
                out.written = u64::try_from(row.get::<_, i64>("written")).unwrap_or(0);
                if row.get::<_, Option<&str>>(0).is_some()
                    && let Some((owner, position, row_health_factor)) =
                        position_state(row, &mut pools)
                {
                    out.changes.push(Change::Position {
                        owner,
                        position,
                        row_health_factor,
                    });
                }
            }
            // One touch for the rows the upsert stamped (lendex_end_pool_touch, sql/functions.sql).
            let stamped = out.written > 0 && self.slot > 0;
            tx.execute(
                queries::END_POOL_TOUCH,
                &[&self.cluster, &self.pool_address, &slot, &stamped],
            )
            .await?;
            out.touched = stamped;
            // (With no context slot a closed position cannot be told from a
            // newer write: nothing is removed.)
            if let Some(scanned) = &self.prune_all_but
                && self.slot > 0
            {
                for row in tx
                    .query(
                        queries::PRUNE_POOL_POSITIONS,
                        &[&self.cluster, &self.pool_address, &slot, scanned],
                    )
                    .await?
                {
                    out.removed += 1;
                    out.changes.push(Change::Removed {
                        owner: key(row.get("owner"))?,
                        position: key(row.get("position_address"))?,
                        slot: self.slot,
                    });
                }
            }
            Ok(out)
        })
    }
}

impl IndexWrite for RefreshPoolPositions {
    fn changed(output: &Reconciled) -> bool {
        !output.changes.is_empty() || output.touched
    }
}

/// `lendex admin repair-decimals`: sets a pool's decimals (read from its mint).
pub struct SetPoolDecimals {
    pub cluster: &'static str,
    pub pool_address: String,
    pub decimals: u8,
}

impl WriteCommand for SetPoolDecimals {
    type Output = ();
    const LANE: Lane = Lane::Index;
    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<()>> {
        Box::pin(async move {
            let decimals = i16::from(self.decimals);
            tx.execute(
                queries::SET_POOL_DECIMALS,
                &[&self.cluster, &self.pool_address, &decimals],
            )
            .await?;
            let details = json!({ "decimals": self.decimals, "via": "repair-decimals" });
            insert_audit(tx, "system", "update_pool", &self.pool_address, &details).await
        })
    }
}

/// The health-factor cache's results, written on every row of each owner whose
/// stored value differs. Touches health_factor_wad only, which is not announced.
pub struct SetHealthFactors {
    pub cluster: &'static str,
    pub owners: Vec<String>,
    pub health_factors: Vec<String>,
}

impl WriteCommand for SetHealthFactors {
    type Output = u64;
    const LANE: Lane = Lane::Index;
    fn rows(&self) -> usize {
        self.owners.len().max(1)
    }
    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<u64>> {
        Box::pin(async move {
            Ok(tx
                .execute(
                    queries::SET_HEALTH_FACTORS,
                    &[&self.cluster, &self.owners, &self.health_factors],
                )
                .await?)
        })
    }
}
