//! The processed overlay in PostgreSQL (docs/design.md §15, sql/0013): the
//! leader lays accounts of the best chain over the confirmed view and takes
//! them back; each move is kept in `processed_overlay` and logged under its
//! transaction's tick, so every replica lays the same overlay at the same
//! place in the one order, and one that loads reads what it holds now.

use deadpool_postgres::Transaction;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio_postgres::GenericClient;

use crate::chain_writes::{AccountWrite, IndexWrite, SyncFeed};
use crate::change_clock::unsigned;
use crate::engine_rows::{PoolKeys, feed_reading, pool_state, position_state};
use crate::error::DbResult;
use crate::queries;
use crate::writes::{Lane, WriteCommand};
use lendex_domain::accounts::LendingPool;
use lendex_domain::pubkey::Pubkey;
use lendex_engine::processed::OverlayWrite;

/// One move of the overlay, as a replica applies it.
#[derive(Debug, Clone, PartialEq)]
pub enum OverlayChange {
    Set(Box<OverlayWrite>),
    Retract { account: Pubkey, rolled_back: bool },
}

/// The overlay moves: `retract` first, then `set` laid over, in one
/// transaction (one tick). `rolled_back`: the retracted accounts leave
/// because their slot was abandoned or the best chain moved to another fork,
/// not because their slot was confirmed.
pub struct PublishOverlay {
    pub cluster: &'static str,
    pub set: Vec<AccountWrite>,
    pub retract: Vec<Pubkey>,
    pub rolled_back: bool,
}

impl WriteCommand for PublishOverlay {
    type Output = ();
    const LANE: Lane = Lane::Index;

    fn rows(&self) -> usize {
        self.set.len() + self.retract.len()
    }

    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<()>> {
        Box::pin(async move {
            let retract = tx.prepare_cached(queries::OVERLAY_RETRACT).await?;
            for account in &self.retract {
                let account = account.to_string();
                tx.execute(&retract, &[&self.cluster, &account, &self.rolled_back])
                    .await?;
            }
            for write in &self.set {
                match write {
                    AccountWrite::Pool(w) => {
                        let stmt = tx.prepare_cached(queries::OVERLAY_POOL).await?;
                        let chain = pool_fields(&w.pool, w.slot, w.write_version);
                        tx.execute(&stmt, &[&self.cluster, &w.pool_address, &chain])
                            .await?;
                    }
                    AccountWrite::Feed(w) => {
                        let stmt = tx.prepare_cached(queries::OVERLAY_SET).await?;
                        let account = w.feed.to_string();
                        let image = feed_image(w, &account);
                        tx.execute(&stmt, &[&self.cluster, &"g", &account, &image])
                            .await?;
                    }
                    AccountWrite::Position(w) => {
                        let stmt = tx.prepare_cached(queries::OVERLAY_SET).await?;
                        let (kind, image) = match &w.position {
                            Some(p) => (
                                "v",
                                json!({
                                    "cluster": self.cluster,
                                    "position_address": w.position_address,
                                    "pool_address": w.pool_address,
                                    "owner": p.owner.to_string(),
                                    "deposit_shares": p.deposit_shares.to_string(),
                                    "borrow_principal": p.borrow_principal.to_string(),
                                    "deposit_idx_snap": p.deposit_idx_snap.to_string(),
                                    "borrow_idx_snap": p.borrow_idx_snap.to_string(),
                                    "original_deposit": p.original_deposit.to_string(),
                                    "health_factor_wad": u128::MAX.to_string(),
                                    "slot": w.slot,
                                    "write_version": w.write_version,
                                    "last_synced_at": chrono::Utc::now(),
                                }),
                            ),
                            None => (
                                "c",
                                json!({
                                    "position_address": w.position_address,
                                    "pool_address": w.pool_address,
                                    "owner": w.owner.to_string(),
                                    "slot": w.slot,
                                }),
                            ),
                        };
                        tx.execute(&stmt, &[&self.cluster, &kind, &w.position_address, &image])
                            .await?;
                    }
                }
            }
            Ok(())
        })
    }
}

impl IndexWrite for PublishOverlay {
    fn changed(_: &()) -> bool {
        true
    }
}

/// A feed's reading as an `oracle_feeds` row would hold it.
fn feed_image(w: &SyncFeed, account: &str) -> Value {
    let p = w.price;
    json!({
        "cluster": w.cluster,
        "feed_address": account,
        "status": w.status.as_str(),
        "price": p.map(|p| p.price),
        "conf": p.map(|p| p.conf.to_string()),
        "exponent": p.map(|p| p.exponent),
        "publish_time": p.map(|p| p.publish_time),
        "posted_slot": p.map(|p| p.posted_slot.to_string()),
        "slot": w.slot,
        "write_version": w.write_version,
    })
}

/// A pool's fields that a chain write carries, by the `pools` column names
/// (the rest of the row is the index's: registration, symbol, decimals).
fn pool_fields(pool: &LendingPool, slot: u64, write_version: Option<u64>) -> Value {
    json!({
        "paused": pool.paused,
        "total_deposits": pool.total_deposits.to_string(),
        "total_borrows": pool.total_borrows.to_string(),
        "accumulated_fees": pool.accumulated_fees.to_string(),
        "total_deposit_shares": pool.total_deposit_shares.to_string(),
        "deposit_index_wad": pool.deposit_index_wad.to_string(),
        "borrow_index_wad": pool.borrow_index_wad.to_string(),
        "last_update_ts": pool.last_update_ts,
        "ltv_wad": pool.ltv_wad.to_string(),
        "liquidation_threshold_wad": pool.liquidation_threshold_wad.to_string(),
        "liquidation_bonus_wad": pool.liquidation_bonus_wad.to_string(),
        "protocol_liq_fee_wad": pool.protocol_liq_fee_wad.to_string(),
        "reserve_factor_wad": pool.reserve_factor_wad.to_string(),
        "close_factor_wad": pool.close_factor_wad.to_string(),
        "base_rate_wad": pool.base_rate_wad.to_string(),
        "optimal_util_wad": pool.optimal_util_wad.to_string(),
        "slope1_wad": pool.slope1_wad.to_string(),
        "slope2_wad": pool.slope2_wad.to_string(),
        "flash_fee_bps": pool.flash_fee_bps,
        "oracle_price": pool.oracle_price,
        "oracle_conf": pool.oracle_conf.map(|c| c.to_string()),
        "oracle_expo": pool.oracle_expo,
        "pyth_price_feed": pool.pyth_price_feed.map(|k| k.to_string()),
        "slot": slot,
        "write_version": write_version,
    })
}

/// Every account the overlay of `cluster` holds (a new leader takes them all
/// back before it lays its own).
pub async fn accounts(client: &impl GenericClient, cluster: &str) -> DbResult<Vec<Pubkey>> {
    let rows = client.query(queries::OVERLAY_ACCOUNTS, &[&cluster]).await?;
    Ok(rows
        .iter()
        .filter_map(|row| row.get::<_, &str>("account").parse().ok())
        .collect())
}

/// What the overlay holds now (read in a load's snapshot).
pub async fn load(client: &impl GenericClient, cluster: &str) -> DbResult<Vec<OverlayWrite>> {
    let mut out: Vec<OverlayWrite> = (client.query(queries::OVERLAY_POOLS, &[&cluster]).await?)
        .iter()
        .filter_map(pool_state)
        .map(OverlayWrite::Pool)
        .collect();
    let mut keys = PoolKeys::default();
    for row in client
        .query(queries::OVERLAY_POSITIONS, &[&cluster])
        .await?
    {
        if let Some((owner, position, _)) = position_state(&row, &mut keys) {
            out.push(OverlayWrite::Position { owner, position });
        }
    }
    for row in client.query(queries::OVERLAY_CLOSED, &[&cluster]).await? {
        out.extend(closed(&row));
    }
    for row in client.query(queries::OVERLAY_FEEDS, &[&cluster]).await? {
        if let Some((feed, reading)) = feed_reading(&row) {
            out.push(OverlayWrite::Feed { feed, reading });
        }
    }
    Ok(out)
}

/// The overlay's moves of ticks in (`from`, `to`], each with its tick, in
/// the log's order; None when there are more than `limit` (a reload then).
pub async fn read_changes(
    client: &deadpool_postgres::Client,
    cluster: &str,
    (from, to): (i64, i64),
    limit: i64,
) -> DbResult<Option<Vec<(u64, OverlayChange)>>> {
    let range: [&(dyn tokio_postgres::types::ToSql + Sync); 4] = [&from, &to, &cluster, &limit];
    let query = async |sql: &str, params: &[&(dyn tokio_postgres::types::ToSql + Sync)]| {
        // Prepared once per connection: every log read of a processed
        // server asks these.
        let statement = client.prepare_cached(sql).await?;
        client.query(&statement, params).await
    };
    let (pools, positions, marks, feeds) = futures_util::try_join!(
        query(queries::FEED_OVERLAY_POOLS, &range[..3]),
        query(queries::FEED_OVERLAY_POSITIONS, &range),
        query(queries::FEED_OVERLAY_MARKS, &range),
        query(queries::FEED_OVERLAY_FEEDS, &range[..3]),
    )?;
    if positions.len() as i64 >= limit || marks.len() as i64 >= limit {
        return Ok(None);
    }
    let place = |row: &tokio_postgres::Row| {
        (
            unsigned(row.get("change_tick")),
            row.get::<_, i64>("change_seq"),
        )
    };
    let mut out: Vec<((u64, i64), OverlayChange)> = Vec::new();
    for row in &pools {
        if let Some(state) = pool_state(row) {
            out.push((
                place(row),
                OverlayChange::Set(Box::new(OverlayWrite::Pool(state))),
            ));
        }
    }
    for row in &feeds {
        if let Some((feed, reading)) = feed_reading(row) {
            let write = OverlayWrite::Feed { feed, reading };
            out.push((place(row), OverlayChange::Set(Box::new(write))));
        }
    }
    let mut keys = PoolKeys::default();
    for row in &positions {
        if let Some((owner, position, _)) = position_state(row, &mut keys) {
            let write = OverlayWrite::Position { owner, position };
            out.push((place(row), OverlayChange::Set(Box::new(write))));
        }
    }
    for row in &marks {
        let change = match row.get::<_, &str>("kind") {
            "c" => closed(row).map(|w| OverlayChange::Set(Box::new(w))),
            _ => (row.get::<_, Option<&str>>("account"))
                .and_then(|a| a.parse().ok())
                .map(|account| OverlayChange::Retract {
                    account,
                    rolled_back: row.get::<_, Option<bool>>("rolled_back").unwrap_or(false),
                }),
        };
        out.extend(change.map(|c| (place(row), c)));
    }
    out.sort_by_key(|(at, _)| *at);
    Ok(Some(
        out.into_iter().map(|((tick, _), c)| (tick, c)).collect(),
    ))
}

fn closed(row: &tokio_postgres::Row) -> Option<OverlayWrite> {
    let key = |column: &str| row.get::<_, Option<&str>>(column)?.parse::<Pubkey>().ok();
    Some(OverlayWrite::Closed {
        owner: key("owner")?,
        position: key("position_address")?,
        slot: unsigned(row.get::<_, Option<i64>>("slot")?),
    })
}
