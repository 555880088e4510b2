//! A batch of history records stored in one transaction: the writer's claim
//! (its epoch still writes; this batch is the next), the owners' and pools'
//! ids and last values, then each table's rows by binary COPY. So a batch is
//! stored whole or not at all, exactly once, and only by the leader of now.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, NaiveDate, Utc};
use futures_util::pin_mut;
use ruint::aliases::U256;
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Transaction};

use super::queries;
use crate::numeric::{NumericU128, NumericU256};
use lendex_domain::history::buckets::{MarketBucket, MarketPoint, market_buckets};
use lendex_domain::history::rule::Baseline;
use lendex_domain::history::{PriceSource, Resolution};
use lendex_domain::pubkey::Pubkey;
use lendex_engine::FastMap;
use lendex_engine::history::{MarketSample, Oracle, Record, Stamped};

/// Records of one leader (its epoch), numbered in the order they are stored.
/// The rows are shared: the queue keeps the batch while a store of it runs.
#[derive(Debug, Clone)]
pub struct Batch {
    pub epoch: i64,
    pub seq: i64,
    pub rows: std::sync::Arc<Vec<Stamped>>,
}

/// How a batch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flushed {
    Stored,
    /// Its commit went unanswered before, but it was stored then.
    AlreadyStored,
    /// Another leader took over since: the batch is not this replica's to store.
    Fenced,
}

/// Dense ids of owners and pools, as the writer learns them.
#[derive(Default)]
pub struct Ids {
    pub owners: FastMap<Pubkey, i32>,
    pub pools: FastMap<Pubkey, i32>,
}

impl Ids {
    /// Adds what `other` learned. The writer lends its ids to each store and
    /// takes them back here: the larger map is kept, the smaller added to it
    /// (re-adding a hundred thousand owners after every flush cost a core).
    pub fn merge(&mut self, mut other: Ids) {
        for (mine, theirs) in [
            (&mut self.owners, &mut other.owners),
            (&mut self.pools, &mut other.pools),
        ] {
            if mine.len() < theirs.len() {
                std::mem::swap(mine, theirs);
            }
            mine.extend(theirs.drain());
        }
    }
}

/// The market rollups kept, each a bucket width.
pub const ROLLUPS: [Resolution; 4] = [
    Resolution::Minute,
    Resolution::FiveMinutes,
    Resolution::Hour,
    Resolution::Day,
];

pub fn time_of(at_us: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(at_us).unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// The UTC day of a time (its partition).
pub fn day_of(at_us: i64) -> NaiveDate {
    time_of(at_us).date_naive()
}

/// The days a batch writes into.
pub fn days_of(rows: &[Stamped]) -> BTreeSet<NaiveDate> {
    rows.iter().map(|r| day_of(r.at_us)).collect()
}

/// Makes the partitions of `days` that `known` does not list (idempotent).
pub async fn ensure_days(
    client: &Client,
    days: &BTreeSet<NaiveDate>,
    known: &mut BTreeSet<NaiveDate>,
) -> Result<u32, tokio_postgres::Error> {
    let mut made = 0;
    for day in days.difference(&known.clone()) {
        let row = client.query_one(queries::MAKE_DAY, &[day]).await?;
        made += row.get::<_, i32>(0) as u32;
        known.insert(*day);
    }
    Ok(made)
}

/// Stores `batch` in one transaction.
pub async fn store(
    client: &mut Client,
    cluster: &str,
    batch: &Batch,
    ids: &mut Ids,
) -> Result<Flushed, tokio_postgres::Error> {
    let tx = client.transaction().await?;
    let claimed = tx
        .query_opt(queries::CLAIM_BATCH, &[&cluster, &batch.epoch, &batch.seq])
        .await?;
    if claimed.is_none() {
        let state = tx.query_opt(queries::WRITER_STATE, &[&cluster]).await?;
        tx.rollback().await?;
        return Ok(match state {
            Some(row) if row.get::<_, i64>(0) == batch.epoch => Flushed::AlreadyStored,
            _ => Flushed::Fenced,
        });
    }
    let mut points = Vec::new();
    let mut events = Vec::new();
    let mut prices = Vec::new();
    let mut market = Vec::new();
    for row in batch.rows.iter() {
        match &row.record {
            Record::Point(p) => points.push((row.at_us, p)),
            Record::Event(e) => events.push((row.at_us, e)),
            Record::Price(p) => prices.push((row.at_us, p)),
            Record::Market(m) => market.push(market_point(row.at_us, m)),
        }
    }
    // Owners new to history get their ids (their last values come with the
    // next checkpoint, not with every batch).
    let new: BTreeSet<Pubkey> = points
        .iter()
        .map(|(_, p)| p.owner)
        .chain(events.iter().map(|(_, e)| e.owner))
        .filter(|o| !ids.owners.contains_key(o))
        .collect();
    add_owners(&tx, cluster, &new, ids).await?;
    // The last price of each pool and source, the next leader's baselines.
    let (mut oracles, mut feeds) = (BTreeMap::new(), BTreeMap::new());
    for (at, p) in &prices {
        let last = match p.source {
            PriceSource::Pool => &mut oracles,
            PriceSource::Feed => &mut feeds,
        };
        last.insert(p.pool, (*at, (p.price, p.conf, p.expo)));
    }
    upsert_pools(&tx, (cluster, queries::UPSERT_POOLS), &oracles, ids).await?;
    upsert_pools(&tx, (cluster, queries::UPSERT_POOL_FEEDS), &feeds, ids).await?;
    let pools: BTreeSet<Pubkey> = events
        .iter()
        .flat_map(|(_, e)| e.pools.iter().copied())
        .filter(|p| !ids.pools.contains_key(p))
        .collect();
    add_pools(&tx, cluster, &pools, ids).await?;

    if !points.is_empty() {
        let sink = tx.copy_in(queries::COPY_POINTS).await?;
        let types = [
            Type::INT4,
            Type::INT2,
            Type::TIMESTAMPTZ,
            Type::INT8,
            Type::NUMERIC,
            Type::NUMERIC,
            Type::NUMERIC,
        ];
        let writer = BinaryCopyInWriter::new(sink, &types);
        pin_mut!(writer);
        for (at, p) in &points {
            let id = ids.owners[&p.owner];
            writer
                .as_mut()
                .write(&[
                    &id,
                    &p.cause.code(),
                    &time_of(*at),
                    &(p.slot as i64),
                    &NumericU128(p.health_factor),
                    &NumericU256(p.collateral),
                    &NumericU256(p.debt),
                ])
                .await?;
        }
        writer.finish().await?;
    }
    if !events.is_empty() {
        let sink = tx.copy_in(queries::COPY_EVENTS).await?;
        let types = [
            Type::TEXT,
            Type::INT2,
            Type::INT4,
            Type::TIMESTAMPTZ,
            Type::INT8,
            Type::NUMERIC,
            Type::NUMERIC,
            Type::INT4,
            Type::NUMERIC,
            Type::INT4,
            Type::NUMERIC,
            Type::INT4_ARRAY,
        ];
        let writer = BinaryCopyInWriter::new(sink, &types);
        pin_mut!(writer);
        for (at, e) in &events {
            let pool_ids: Vec<i32> = e.pools.iter().map(|p| ids.pools[p]).collect();
            let (debt_pool, repaid, collateral_pool, seized) = match e.liquidation {
                Some((d, r, c, s)) => (
                    Some(ids.pools[&d]),
                    Some(NumericU128(r)),
                    Some(ids.pools[&c]),
                    Some(NumericU128(s)),
                ),
                None => (None, None, None, None),
            };
            writer
                .as_mut()
                .write(&[
                    &cluster,
                    &e.kind.code(),
                    &ids.owners[&e.owner],
                    &time_of(*at),
                    &(e.slot as i64),
                    &NumericU128(e.health_factor_before),
                    &NumericU128(e.health_factor_after),
                    &debt_pool,
                    &repaid,
                    &collateral_pool,
                    &seized,
                    &pool_ids,
                ])
                .await?;
        }
        writer.finish().await?;
    }
    if !prices.is_empty() {
        let sink = tx.copy_in(queries::COPY_PRICES).await?;
        let types = [
            Type::INT4,
            Type::TIMESTAMPTZ,
            Type::INT8,
            Type::INT8,
            Type::NUMERIC,
            Type::INT4,
            Type::CHAR,
        ];
        let writer = BinaryCopyInWriter::new(sink, &types);
        pin_mut!(writer);
        for (at, p) in &prices {
            writer
                .as_mut()
                .write(&[
                    &ids.pools[&p.pool],
                    &time_of(*at),
                    &(p.slot as i64),
                    &p.price,
                    &p.conf.map(|c| NumericU128(c.into())),
                    &p.expo,
                    &p.source.code(),
                ])
                .await?;
        }
        writer.finish().await?;
    }
    if !market.is_empty() {
        insert_market(&tx, cluster, &market).await?;
    }
    tx.commit().await?;
    Ok(Flushed::Stored)
}

/// Each owner's last point in `rows`, with its time, into `last` (what a
/// checkpoint writes once the batch is stored).
pub fn last_points(rows: &[Stamped], last: &mut FastMap<Pubkey, (i64, Baseline)>) {
    for row in rows {
        if let Record::Point(p) = &row.record {
            let baseline = Baseline::of(
                p.health_factor,
                p.collateral == U256::ZERO,
                p.debt == U256::ZERO,
            );
            last.insert(p.owner, (row.at_us, baseline));
        }
    }
}

/// Writes the owners' last recorded values (by id), holding every point stored
/// up to `upto_us`, under the writer's epoch (a former leader is fenced off).
pub async fn checkpoint(
    client: &mut Client,
    cluster: &str,
    epoch: i64,
    upto_us: i64,
    owners: &[(i32, i64, Baseline)],
) -> Result<Flushed, tokio_postgres::Error> {
    let tx = client.transaction().await?;
    let claimed = tx
        .query_opt(
            queries::CLAIM_CHECKPOINT,
            &[&cluster, &epoch, &time_of(upto_us)],
        )
        .await?;
    if claimed.is_none() {
        tx.rollback().await?;
        return Ok(Flushed::Fenced);
    }
    let ids: Vec<i32> = owners.iter().map(|(id, ..)| *id).collect();
    let hfs: Vec<NumericU128> = owners
        .iter()
        .map(|(_, _, b)| NumericU128(b.health_factor))
        .collect();
    let bad: Vec<bool> = owners.iter().map(|(_, _, b)| b.bad_debt).collect();
    let ats: Vec<DateTime<Utc>> = owners.iter().map(|(_, at, _)| time_of(*at)).collect();
    tx.execute(queries::SET_OWNER_BASELINES, &[&ids, &hfs, &bad, &ats])
        .await?;
    tx.commit().await?;
    Ok(Flushed::Stored)
}

fn market_point(at_us: i64, m: &MarketSample) -> MarketPoint {
    MarketPoint {
        at_us,
        owners: m.owners,
        under_water: m.under_water,
        at_risk: m.at_risk,
        debt_under_water: m.debt_under_water,
        bad_debt: m.bad_debt,
        deposits: Some(m.deposits),
        borrows: Some(m.borrows),
    }
}

async fn add_owners(
    tx: &Transaction<'_>,
    cluster: &str,
    owners: &BTreeSet<Pubkey>,
    ids: &mut Ids,
) -> Result<(), tokio_postgres::Error> {
    if owners.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = owners.iter().map(Pubkey::to_string).collect();
    tx.execute(queries::ADD_OWNERS, &[&cluster, &names]).await?;
    let rows = tx.query(queries::OWNER_IDS, &[&cluster, &names]).await?;
    learn(&rows, &mut ids.owners);
    Ok(())
}

/// Each pool's last recorded price of one source (`query` says which).
async fn upsert_pools(
    tx: &Transaction<'_>,
    (cluster, query): (&str, &str),
    oracles: &BTreeMap<Pubkey, (i64, Oracle)>,
    ids: &mut Ids,
) -> Result<(), tokio_postgres::Error> {
    if oracles.is_empty() {
        return Ok(());
    }
    let pools: Vec<String> = oracles.keys().map(Pubkey::to_string).collect();
    let prices: Vec<Option<i64>> = oracles.values().map(|(_, o)| o.0).collect();
    let confs: Vec<Option<NumericU128>> = oracles
        .values()
        .map(|(_, o)| o.1.map(|c| NumericU128(c.into())))
        .collect();
    let expos: Vec<Option<i32>> = oracles.values().map(|(_, o)| o.2).collect();
    let ats: Vec<DateTime<Utc>> = oracles.values().map(|(at, _)| time_of(*at)).collect();
    let rows = tx
        .query(query, &[&cluster, &pools, &prices, &confs, &expos, &ats])
        .await?;
    learn(&rows, &mut ids.pools);
    Ok(())
}

async fn add_pools(
    tx: &Transaction<'_>,
    cluster: &str,
    pools: &BTreeSet<Pubkey>,
    ids: &mut Ids,
) -> Result<(), tokio_postgres::Error> {
    if pools.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = pools.iter().map(Pubkey::to_string).collect();
    tx.execute(queries::ADD_POOLS, &[&cluster, &names]).await?;
    let rows = tx.query(queries::POOL_IDS, &[&cluster, &names]).await?;
    learn(&rows, &mut ids.pools);
    Ok(())
}

/// (id, key) rows into the id map.
fn learn(rows: &[tokio_postgres::Row], into: &mut FastMap<Pubkey, i32>) {
    for row in rows {
        if let Ok(key) = row.get::<_, &str>(1).parse::<Pubkey>() {
            into.insert(key, row.get(0));
        }
    }
}

/// The samples, and their partials merged into each rollup.
async fn insert_market(
    tx: &Transaction<'_>,
    cluster: &str,
    points: &[MarketPoint],
) -> Result<(), tokio_postgres::Error> {
    let ats: Vec<DateTime<Utc>> = points.iter().map(|p| time_of(p.at_us)).collect();
    let count =
        |f: fn(&MarketPoint) -> u64| -> Vec<i64> { points.iter().map(|p| f(p) as i64).collect() };
    let wide = |f: fn(&MarketPoint) -> U256| -> Vec<NumericU256> {
        points.iter().map(|p| NumericU256(f(p))).collect()
    };
    let totals = |f: fn(&MarketPoint) -> Option<U256>| -> Vec<Option<NumericU256>> {
        points.iter().map(|p| f(p).map(NumericU256)).collect()
    };
    let params: [&(dyn ToSql + Sync); 9] = [
        &cluster,
        &ats,
        &count(|p| p.owners),
        &count(|p| p.under_water),
        &count(|p| p.at_risk),
        &wide(|p| p.debt_under_water),
        &wide(|p| p.bad_debt),
        &totals(|p| p.deposits),
        &totals(|p| p.borrows),
    ];
    tx.execute(queries::INSERT_MARKET, &params).await?;
    let mut partials: Vec<(i16, MarketBucket)> = Vec::new();
    for resolution in ROLLUPS {
        let width = resolution.width_us().expect("rollups have a width");
        partials.extend(
            market_buckets(points, width)
                .into_iter()
                .map(|b| (resolution.code(), b)),
        );
    }
    let column =
        |f: fn(&MarketBucket) -> i64| -> Vec<i64> { partials.iter().map(|(_, b)| f(b)).collect() };
    let resolutions: Vec<i16> = partials.iter().map(|(r, _)| *r).collect();
    let starts: Vec<DateTime<Utc>> = partials.iter().map(|(_, b)| time_of(b.start_us)).collect();
    let last_ats: Vec<DateTime<Utc>> = partials
        .iter()
        .map(|(_, b)| time_of(b.last.at_us))
        .collect();
    let debts: Vec<NumericU256> = partials
        .iter()
        .map(|(_, b)| NumericU256(b.last.debt_under_water))
        .collect();
    let bads: Vec<NumericU256> = partials
        .iter()
        .map(|(_, b)| NumericU256(b.last.bad_debt))
        .collect();
    let last_totals = |f: fn(&MarketPoint) -> Option<U256>| -> Vec<Option<NumericU256>> {
        partials
            .iter()
            .map(|(_, b)| f(&b.last).map(NumericU256))
            .collect()
    };
    let params: [&(dyn ToSql + Sync); 13] = [
        &cluster,
        &resolutions,
        &starts,
        &column(|b| b.count as i64),
        &last_ats,
        &column(|b| b.last.owners as i64),
        &column(|b| b.last.under_water as i64),
        &column(|b| b.under_water_max as i64),
        &column(|b| b.last.at_risk as i64),
        &debts,
        &bads,
        &last_totals(|p| p.deposits),
        &last_totals(|p| p.borrows),
    ];
    tx.execute(queries::MERGE_MARKET_BUCKETS, &params).await?;
    Ok(())
}
