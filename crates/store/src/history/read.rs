//! History as the API reads it: typed rows from the named statements (each
//! prepared once per connection: planning over thirty partitions is no small
//! part of a read), values in NUMERIC's binary form, times in microseconds
//! since the Unix epoch.

use chrono::{DateTime, Utc};
use futures_util::{StreamExt, pin_mut};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::queries;
use super::write::time_of;
use crate::error::{DbError, DbResult};
use crate::handle::Session;
use crate::numeric::{NumericU128, NumericU256};
use lendex_domain::history::buckets::{
    HealthBucket, HealthPoint, MarketBucket, MarketPoint, health_buckets,
    market_buckets as market_buckets_of, range_parts,
};
use lendex_domain::history::{Cause, EventKind, PriceSource, Resolution, bucket_start};

fn micros(row: &Row, i: usize) -> i64 {
    row.get::<_, DateTime<Utc>>(i).timestamp_micros()
}

fn slot(row: &Row, i: usize) -> u64 {
    row.get::<_, i64>(i).max(0) as u64
}

fn count(row: &Row, i: usize) -> u64 {
    row.get::<_, i64>(i).max(0) as u64
}

fn point(row: &Row) -> DbResult<HealthPoint> {
    Ok(HealthPoint {
        at_us: micros(row, 0),
        slot: slot(row, 1),
        health_factor: row.try_get::<_, NumericU128>(2)?.0,
        collateral: row.try_get::<_, NumericU256>(3)?.0,
        debt: row.try_get::<_, NumericU256>(4)?.0,
        cause: Cause::from_code(row.get(5))
            .ok_or_else(|| DbError::failed("a history point of an unknown cause"))?,
    })
}

/// The dense id of an owner that has history.
pub async fn owner_id(session: &Session, cluster: &str, owner: &str) -> DbResult<Option<i32>> {
    id_of(session, queries::OWNER_ID, cluster, owner).await
}

/// The dense id of a pool that has history.
pub async fn pool_id(session: &Session, cluster: &str, pool: &str) -> DbResult<Option<i32>> {
    id_of(session, queries::POOL_ID, cluster, pool).await
}

async fn id_of(
    session: &Session,
    statement: &str,
    cluster: &str,
    key: &str,
) -> DbResult<Option<i32>> {
    let client = session.client();
    Ok(client
        .query_opt(&client.prepare_cached(statement).await?, &[&cluster, &key])
        .await?
        .map(|r| r.get(0)))
}

/// An owner's points with at in [from, to), oldest first, at most `limit`.
pub async fn points(
    session: &Session,
    owner: i32,
    from_us: i64,
    to_us: i64,
    limit: i64,
) -> DbResult<Vec<HealthPoint>> {
    let client = session.client();
    let rows = client
        .query(
            &client.prepare_cached(queries::POINTS).await?,
            &[&owner, &time_of(from_us), &time_of(to_us), &limit],
        )
        .await?;
    rows.iter().map(point).collect()
}

/// An owner's last point before `before_us`.
pub async fn point_before(
    session: &Session,
    owner: i32,
    before_us: i64,
) -> DbResult<Option<HealthPoint>> {
    let client = session.client();
    client
        .query_opt(
            &client.prepare_cached(queries::POINT_BEFORE).await?,
            &[&owner, &time_of(before_us)],
        )
        .await?
        .as_ref()
        .map(point)
        .transpose()
}

/// An owner's points with at in [from, to) in buckets of `resolution`,
/// oldest first, at most `limit` buckets: the points are read as a stream
/// and the read stops once the bucket after the last one wanted begins. A
/// bucket cut by `from` or `to` holds only the points inside the range.
pub async fn point_buckets(
    session: &Session,
    owner: i32,
    resolution: Resolution,
    from_us: i64,
    to_us: i64,
    limit: usize,
) -> DbResult<Vec<HealthBucket>> {
    let client = session.client();
    let width = resolution
        .width_us()
        .ok_or_else(|| DbError::failed("buckets of the raw resolution"))?;
    let (from, to) = (time_of(from_us), time_of(to_us));
    let params: [&(dyn ToSql + Sync); 3] = [&owner, &from, &to];
    let statement = client.prepare_cached(queries::POINTS_ALL).await?;
    let rows = client.query_raw(&statement, params).await?;
    pin_mut!(rows);
    let mut points = Vec::new();
    let mut starts = 0;
    let mut current = None;
    while let Some(row) = rows.next().await {
        let p = point(&row?)?;
        let start = bucket_start(p.at_us, width);
        if current != Some(start) {
            if starts == limit {
                break; // the first bucket past the page
            }
            starts += 1;
            current = Some(start);
        }
        points.push(p);
    }
    Ok(health_buckets(&points, width))
}

/// A price row of a pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceRow {
    pub at_us: i64,
    pub slot: u64,
    pub price: Option<i64>,
    pub conf: Option<u128>,
    pub expo: Option<i32>,
    pub source: PriceSource,
}

pub async fn prices(
    session: &Session,
    pool: i32,
    from_us: i64,
    to_us: i64,
    limit: i64,
) -> DbResult<Vec<PriceRow>> {
    let client = session.client();
    let rows = client
        .query(
            &client.prepare_cached(queries::PRICES).await?,
            &[&pool, &time_of(from_us), &time_of(to_us), &limit],
        )
        .await?;
    rows.iter()
        .map(|row| {
            Ok(PriceRow {
                at_us: micros(row, 0),
                slot: slot(row, 1),
                price: row.get(2),
                conf: row.try_get::<_, Option<NumericU128>>(3)?.map(|w| w.0),
                expo: row.get(4),
                source: PriceSource::from_code(row.get(5))
                    .ok_or_else(|| DbError::failed("unknown price source"))?,
            })
        })
        .collect()
}

fn market_point(row: &Row) -> DbResult<MarketPoint> {
    Ok(MarketPoint {
        at_us: micros(row, 0),
        owners: count(row, 1),
        under_water: count(row, 2),
        at_risk: count(row, 3),
        debt_under_water: row.try_get::<_, NumericU256>(4)?.0,
        bad_debt: row.try_get::<_, NumericU256>(5)?.0,
        deposits: row.try_get::<_, Option<NumericU256>>(6)?.map(|w| w.0),
        borrows: row.try_get::<_, Option<NumericU256>>(7)?.map(|w| w.0),
    })
}

pub async fn market(
    session: &Session,
    cluster: &str,
    from_us: i64,
    to_us: i64,
    limit: i64,
) -> DbResult<Vec<MarketPoint>> {
    let client = session.client();
    let rows = client
        .query(
            &client.prepare_cached(queries::MARKET).await?,
            &[&cluster, &time_of(from_us), &time_of(to_us), &limit],
        )
        .await?;
    rows.iter().map(market_point).collect()
}

pub async fn market_before(
    session: &Session,
    cluster: &str,
    before_us: i64,
) -> DbResult<Option<MarketPoint>> {
    let client = session.client();
    client
        .query_opt(
            &client.prepare_cached(queries::MARKET_BEFORE).await?,
            &[&cluster, &time_of(before_us)],
        )
        .await?
        .as_ref()
        .map(market_point)
        .transpose()
}

/// The market's samples with at in [from, to) in buckets of `resolution`,
/// oldest first, at most about `limit`: the intervals wholly inside the
/// range from the stored rollups, an interval cut by `from` or `to` from its
/// samples inside the range (`range_parts`), the three reads pipelined.
pub async fn market_buckets(
    session: &Session,
    cluster: &str,
    resolution: Resolution,
    from_us: i64,
    to_us: i64,
    limit: i64,
) -> DbResult<Vec<MarketBucket>> {
    let width = resolution
        .width_us()
        .ok_or_else(|| DbError::failed("buckets of the raw resolution"))?;
    let parts = range_parts(from_us, to_us, width);
    let edge = |part: Option<(i64, i64)>| async move {
        match part {
            Some((a, b)) => Ok(market_buckets_of(
                &market(session, cluster, a, b, i64::MAX).await?,
                width,
            )),
            None => DbResult::Ok(Vec::new()),
        }
    };
    let whole = async {
        let Some((a, b)) = parts.whole else {
            return DbResult::Ok(Vec::new());
        };
        stored_market_buckets(session, cluster, resolution, a, b, limit).await
    };
    let (head, whole, tail) = futures_util::try_join!(edge(parts.head), whole, edge(parts.tail))?;
    Ok(head.into_iter().chain(whole).chain(tail).collect())
}

/// The stored rollups of `resolution` whose start is in [from, to) (aligned).
async fn stored_market_buckets(
    session: &Session,
    cluster: &str,
    resolution: Resolution,
    from_us: i64,
    to_us: i64,
    limit: i64,
) -> DbResult<Vec<MarketBucket>> {
    let client = session.client();
    let params: [&(dyn ToSql + Sync); 5] = [
        &cluster,
        &resolution.code(),
        &time_of(from_us),
        &time_of(to_us),
        &limit,
    ];
    let rows = client
        .query(
            &client.prepare_cached(queries::MARKET_BUCKETS).await?,
            &params,
        )
        .await?;
    rows.iter()
        .map(|row| {
            Ok(MarketBucket {
                start_us: micros(row, 0),
                count: count(row, 1),
                last: MarketPoint {
                    at_us: micros(row, 2),
                    owners: count(row, 3),
                    under_water: count(row, 4),
                    at_risk: count(row, 6),
                    debt_under_water: row.try_get::<_, NumericU256>(7)?.0,
                    bad_debt: row.try_get::<_, NumericU256>(8)?.0,
                    deposits: row.try_get::<_, Option<NumericU256>>(9)?.map(|w| w.0),
                    borrows: row.try_get::<_, Option<NumericU256>>(10)?.map(|w| w.0),
                },
                under_water_max: count(row, 5),
            })
        })
        .collect()
}

/// An event as served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRow {
    pub id: i64,
    pub kind: EventKind,
    pub owner: String,
    pub at_us: i64,
    pub slot: u64,
    pub health_factor_before: u128,
    pub health_factor_after: u128,
    pub debt_pool: Option<String>,
    pub repaid: Option<u128>,
    pub collateral_pool: Option<String>,
    pub seized: Option<u128>,
}

/// The events list's filters, as ids.
#[derive(Debug, Clone, Copy, Default)]
pub struct EventFilter {
    pub kind: Option<EventKind>,
    pub owner: Option<i32>,
    pub pool: Option<i32>,
}

/// Events with at in [from, to) and id below `before_id`, newest first.
pub async fn events(
    session: &Session,
    cluster: &str,
    filter: EventFilter,
    from_us: i64,
    to_us: i64,
    before_id: i64,
    limit: i64,
) -> DbResult<Vec<EventRow>> {
    let client = session.client();
    let (from, to) = (time_of(from_us), time_of(to_us));
    let kind = filter.kind.map(EventKind::code);
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&cluster, &from, &to, &before_id, &limit];
    let statement = match (&kind, &filter.owner, &filter.pool) {
        (None, None, None) => queries::EVENTS,
        (Some(k), None, None) => {
            params.push(k);
            queries::EVENTS_BY_KIND
        }
        (None, Some(o), None) => {
            params.push(o);
            queries::EVENTS_BY_OWNER
        }
        (None, None, Some(p)) => {
            params.push(p);
            queries::EVENTS_BY_POOL
        }
        (Some(k), Some(o), None) => {
            params.extend([k as &(dyn ToSql + Sync), o]);
            queries::EVENTS_BY_KIND_OWNER
        }
        (Some(k), None, Some(p)) => {
            params.extend([k as &(dyn ToSql + Sync), p]);
            queries::EVENTS_BY_KIND_POOL
        }
        (None, Some(o), Some(p)) => {
            params.extend([o as &(dyn ToSql + Sync), p]);
            queries::EVENTS_BY_OWNER_POOL
        }
        (Some(k), Some(o), Some(p)) => {
            params.extend([k as &(dyn ToSql + Sync), o, p]);
            queries::EVENTS_BY_KIND_OWNER_POOL
        }
    };
    let statement = client.prepare_cached(statement).await?;
    let rows = client.query(&statement, &params).await?;
    rows.iter()
        .map(|row| {
            Ok(EventRow {
                id: row.get(0),
                kind: EventKind::from_code(row.get(1))
                    .ok_or_else(|| DbError::failed("a history event of an unknown kind"))?,
                owner: row.get(2),
                at_us: micros(row, 3),
                slot: slot(row, 4),
                health_factor_before: row.try_get::<_, NumericU128>(5)?.0,
                health_factor_after: row.try_get::<_, NumericU128>(6)?.0,
                debt_pool: row.get(7),
                repaid: row.try_get::<_, Option<NumericU128>>(8)?.map(|w| w.0),
                collateral_pool: row.get(9),
                seized: row.try_get::<_, Option<NumericU128>>(10)?.map(|w| w.0),
            })
        })
        .collect()
}
