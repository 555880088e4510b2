//! History's reads against what is stored: buckets equal to a brute-force
//! aggregation of the raw points in the range (the owner's and the market's,
//! with ranges cut inside an interval), paging that neither drops nor repeats a row
//! while rows are added, a conditional GET, and rows of a day with no
//! partition yet (a clock that jumped) landing in that day's partition.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use chrono::{DateTime, Utc};
use lendex::domain::history::Cause;
use lendex::domain::pubkey::Pubkey;
use lendex::engine::history::{PointRecord, Record, Stamped};
use lendex::store::history::write::{Batch, Flushed, Ids, days_of, ensure_days, store};
use ruint::aliases::U256;
use serde_json::Value;

use crate::common::*;
use crate::fixtures::history::history_app;

const HOUR_US: i64 = 3_600_000_000;

fn at_us(text: &str) -> i64 {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .timestamp_micros()
}

/// `n` points of a new owner from `start_us`, one every `step_us`, with
/// values that wander; made by SQL, their days' partitions first.
async fn seed_points(db: &tokio_postgres::Client, start_us: i64, step_us: i64, n: i64) -> String {
    let owner = Pubkey::new_unique().to_string();
    let id: i32 = db
        .query_one(
            "INSERT INTO history_owners (cluster, owner) VALUES ('localnet', $1) RETURNING id",
            &[&owner],
        )
        .await
        .unwrap()
        .get(0);
    let (first, last) = (start_us, start_us + step_us * n);
    let days: Vec<chrono::NaiveDate> = (0..=(last - first) / 86_400_000_000 + 1)
        .map(|d| {
            DateTime::<Utc>::from_timestamp_micros(first + d * 86_400_000_000)
                .unwrap()
                .date_naive()
        })
        .collect();
    for day in days {
        db.execute("SELECT lendex_history_make_day($1)", &[&day])
            .await
            .unwrap();
    }
    db.execute(
        "INSERT INTO history_points (owner_id, cause, at, slot, health_factor_wad,
             collateral_value_wad, debt_value_wad)
         SELECT $1, 2, to_timestamp(($2::bigint + g * $3::bigint) / 1e6), 1000 + g,
             (800000000000000000 + ((g * 7919) % 600) * 1000000000000000)::numeric,
             g::numeric * 1000000000000000000, 5000000000000000000000
         FROM generate_series(0, $4::bigint - 1) g",
        &[&id, &start_us, &step_us, &n],
    )
    .await
    .unwrap();
    owner
}

async fn get_all(app: &TestApp, path: &str) -> (Vec<Value>, usize) {
    let mut out = Vec::new();
    let mut pages = 0;
    let mut cursor: Option<String> = None;
    loop {
        let url = match &cursor {
            Some(c) => format!("{path}&cursor={c}"),
            None => path.to_string(),
        };
        let (status, body) = app.get(&url).await;
        assert_eq!(status, 200, "{url}: {body}");
        pages += 1;
        out.extend(body["points"].as_array().unwrap().iter().cloned());
        match body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return (out, pages),
        }
    }
}

fn wad(v: &Value) -> u128 {
    v.as_str().unwrap().parse().unwrap()
}

#[actix_rt::test]
async fn buckets_equal_a_brute_force_aggregation_of_the_points() {
    let app = history_app().await;
    let db = app.db.connect().await;
    // 3,000 points 37 s apart from 23:00 one day: about 31 hours, across a midnight.
    let start = at_us("2026-11-20T23:00:00Z");
    let owner = seed_points(&db, start, 37_000_000, 3_000).await;
    // Both ends inside an interval of every resolution: the edge buckets
    // hold only the points in [from, to).
    let range = format!(
        "from={}&to={}",
        (start + 1_234_567) / 1_000,
        (start + 30 * HOUR_US + 98_765_432) / 1_000
    );
    let (raw, _) = get_all(
        &app,
        &format!("/api/positions/{owner}/history?{range}&limit=700"),
    )
    .await;
    assert!(raw.len() > 2_500);
    for (resolution, width) in [("1m", 60), ("5m", 300), ("1h", 3_600), ("1d", 86_400)] {
        let width = width * 1_000_000i64;
        let mut expected: BTreeMap<i64, Vec<&Value>> = BTreeMap::new();
        for p in &raw {
            let at = at_us(p["at"].as_str().unwrap());
            expected
                .entry(at.div_euclid(width) * width)
                .or_default()
                .push(p);
        }
        let (buckets, pages) = get_all(
            &app,
            &format!("/api/positions/{owner}/history?{range}&resolution={resolution}&limit=37"),
        )
        .await;
        assert_eq!(buckets.len(), expected.len(), "{resolution}");
        assert!(pages > 1 || expected.len() <= 37);
        for (bucket, (start, points)) in buckets.iter().zip(&expected) {
            let hfs: Vec<u128> = points
                .iter()
                .map(|p| wad(&p["health_factor_wad"]))
                .collect();
            assert_eq!(at_us(bucket["start"].as_str().unwrap()), *start);
            assert_eq!(
                bucket["count"],
                points.len() as u64,
                "{resolution} {bucket}"
            );
            assert_eq!(wad(&bucket["first"]), hfs[0]);
            assert_eq!(wad(&bucket["last"]), *hfs.last().unwrap());
            assert_eq!(wad(&bucket["min"]), *hfs.iter().min().unwrap());
            assert_eq!(wad(&bucket["max"]), *hfs.iter().max().unwrap());
            assert_eq!(
                bucket["under_water"],
                hfs.iter().any(|h| *h < 1_000_000_000_000_000_000)
            );
            let last = points.last().unwrap();
            assert_eq!(bucket["collateral_value_wad"], last["collateral_value_wad"]);
            assert_eq!(bucket["debt_value_wad"], last["debt_value_wad"]);
        }
    }
}

/// Market samples every `step_us` from `start_us`, with the stored rollups of
/// every resolution over them (what the history writer keeps), by SQL. The
/// first hour's samples have no deposits or borrows (recorded before the
/// market recorded them).
async fn seed_market(db: &tokio_postgres::Client, start_us: i64, step_us: i64, n: i64) {
    let day = DateTime::<Utc>::from_timestamp_micros(start_us)
        .unwrap()
        .date_naive();
    for d in [day, day.succ_opt().unwrap()] {
        db.execute("SELECT lendex_history_make_day($1)", &[&d])
            .await
            .unwrap();
    }
    db.execute(
        "INSERT INTO history_market (cluster, at, owners, owners_under_water, owners_at_risk,
             debt_value_wad_under_water, bad_debt_value_wad, deposits_value_wad,
             borrows_value_wad)
         SELECT 'localnet', to_timestamp(($1::bigint + g * $2::bigint) / 1e6), 600,
             (g * 7919) % 37, 5, g::numeric * 1000, 0,
             CASE WHEN g >= 360 THEN g::numeric * 10000000 END,
             CASE WHEN g >= 360 THEN (g * 7919 % 1000)::numeric * 10000000 END
         FROM generate_series(0, $3::bigint - 1) g",
        &[&start_us, &step_us, &n],
    )
    .await
    .unwrap();
    for (code, seconds) in [(1i16, 60i64), (2, 300), (3, 3_600), (4, 86_400)] {
        db.execute(
            "INSERT INTO history_market_buckets
             SELECT DISTINCT ON (start) 'localnet', $1::int2, start,
                 count(*) OVER w, at, owners, owners_under_water,
                 max(owners_under_water) OVER w, owners_at_risk,
                 debt_value_wad_under_water, bad_debt_value_wad, deposits_value_wad,
                 borrows_value_wad
             FROM (SELECT *, to_timestamp(floor(extract(epoch FROM at)::float8 / $2::float8) * $2::float8) AS start
                   FROM history_market) m
             WINDOW w AS (PARTITION BY start)
             ORDER BY start, at DESC",
            &[&code, &(seconds as f64)],
        )
        .await
        .unwrap();
    }
}

#[actix_rt::test]
async fn market_buckets_hold_only_the_samples_in_the_range() {
    let app = history_app().await;
    let db = app.db.connect().await;
    // 10 s samples over five hours of a past day, away from the live samples.
    let start = at_us("2026-11-19T10:00:00Z");
    seed_market(&db, start, 10_000_000, 1_800).await;
    for (from, to) in [
        // Cut inside minutes (the case of `to` in the middle of a minute).
        (start + 1_234_567, start + 3 * HOUR_US + 25_000_000),
        // Both inside one minute.
        (start + 5_000_000, start + 35_000_000),
        // Aligned on the hour.
        (start, start + 2 * HOUR_US),
    ] {
        let range = format!("from={}&to={}", from / 1000, to / 1000);
        let (raw, _) = get_all(&app, &format!("/api/history/market?{range}&limit=5000")).await;
        for (resolution, width) in [("1m", 60), ("5m", 300), ("1h", 3_600), ("1d", 86_400)] {
            let width = width * 1_000_000i64;
            let mut expected: BTreeMap<i64, Vec<&Value>> = BTreeMap::new();
            for p in &raw {
                let at = at_us(p["at"].as_str().unwrap());
                assert!(from <= at && at < to);
                expected
                    .entry(at.div_euclid(width) * width)
                    .or_default()
                    .push(p);
            }
            let (buckets, _) = get_all(
                &app,
                &format!("/api/history/market?{range}&resolution={resolution}&limit=7"),
            )
            .await;
            assert_eq!(buckets.len(), expected.len(), "{resolution} {range}");
            for (bucket, (start, points)) in buckets.iter().zip(&expected) {
                let last = points.last().unwrap();
                let max = points
                    .iter()
                    .map(|p| p["owners_under_water"].as_u64().unwrap())
                    .max()
                    .unwrap();
                assert_eq!(at_us(bucket["start"].as_str().unwrap()), *start);
                assert_eq!(
                    bucket["count"],
                    points.len() as u64,
                    "{resolution} {range}: {bucket}"
                );
                assert_eq!(bucket["owners_under_water_max"], max, "{bucket}");
                for field in [
                    "owners_under_water",
                    "debt_value_wad_under_water",
                    "deposits_value_wad",
                    "borrows_value_wad",
                ] {
                    assert_eq!(bucket[field], last[field], "{resolution} {field}");
                }
            }
        }
    }
}

#[actix_rt::test]
async fn paging_neither_drops_nor_repeats_a_row_while_rows_are_added() {
    let app = history_app().await;
    let db = app.db.connect().await;
    let start = at_us("2026-11-21T00:00:00Z");
    let owner = seed_points(&db, start, 1_000_000, 2_000).await;
    let id: i32 = db
        .query_one("SELECT id FROM history_owners WHERE owner = $1", &[&owner])
        .await
        .unwrap()
        .get(0);
    let before: BTreeSet<String> = {
        let (all, _) = get_all(
            &app,
            &format!(
                "/api/positions/{owner}/history?from={}&to={}&limit=5000",
                start / 1000,
                (start + 3 * HOUR_US) / 1000
            ),
        )
        .await;
        all.iter()
            .map(|p| p["at"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(before.len(), 2_000);
    // While a reader pages through, rows are added between the existing ones
    // (at half seconds), before and after where the reader stands.
    let url = app.db.url.clone();
    let writer = tokio::spawn(async move {
        let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        for k in 0..40i64 {
            let at = start + ((k * 997) % 2_000) * 1_000_000 + 500_000;
            client
                .execute(
                    "INSERT INTO history_points VALUES ($1, 1, to_timestamp($2::bigint / 1e6), 1, 1, 1, 1)",
                    &[&id, &at],
                )
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    let mut seen: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    let base = format!(
        "/api/positions/{owner}/history?from={}&to={}&limit=50",
        start / 1000,
        (start + 3 * HOUR_US) / 1000
    );
    loop {
        let url = match &cursor {
            Some(c) => format!("{base}&cursor={c}"),
            None => base.clone(),
        };
        let (status, body) = app.get(&url).await;
        assert_eq!(status, 200);
        seen.extend(
            body["points"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["at"].as_str().unwrap().to_string()),
        );
        match body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    writer.await.unwrap();
    let distinct: BTreeSet<&String> = seen.iter().collect();
    assert_eq!(distinct.len(), seen.len(), "no row twice");
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(sorted, seen, "oldest first");
    assert!(
        before.iter().all(|at| distinct.contains(at)),
        "no row dropped"
    );
}

#[actix_rt::test]
async fn a_conditional_get_of_history_is_304() {
    let app = history_app().await;
    let db = app.db.connect().await;
    let owner = seed_points(&db, at_us("2026-11-22T00:00:00Z"), 60_000_000, 10).await;
    let path =
        format!("/api/positions/{owner}/history?from=2026-11-22T00:00:00Z&to=2026-11-23T00:00:00Z");
    let first = app.http.get(app.url(&path)).send().await.unwrap();
    assert_eq!(first.status(), 200);
    let tag = first.headers()["etag"].clone();
    let again = app
        .http
        .get(app.url(&path))
        .header("If-None-Match", tag.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["etag"], tag);
    assert!(again.bytes().await.unwrap().is_empty());
}

#[actix_rt::test]
async fn rows_of_a_day_with_no_partition_yet_land_in_that_day() {
    // A database of its own, with no service writing history into it.
    let db = TestDb::create().await;
    let pool = db.pool();
    lendex::store::migrate::run(&pool, "").await.unwrap();
    let mut client = db.connect().await;
    // A clock that jumped 40 days ahead, past every partition made.
    let at = Utc::now().timestamp_micros() + 40 * 86_400_000_000;
    let day = DateTime::<Utc>::from_timestamp_micros(at)
        .unwrap()
        .date_naive();
    let owner = Pubkey::new_unique();
    let rows = vec![Stamped {
        at_us: at,
        record: Record::Point(PointRecord {
            owner,
            slot: 7,
            health_factor: 1,
            collateral: U256::from(2u8),
            debt: U256::from(3u8),
            cause: Cause::Load,
        }),
    }];
    let epoch: i64 = client
        .query_one(
            "INSERT INTO history_writers (cluster, epoch) VALUES ('localnet', 1000)
             ON CONFLICT (cluster) DO UPDATE SET epoch = 1000, flushed = 0 RETURNING epoch",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let mut known = BTreeSet::new();
    ensure_days(&client, &days_of(&rows), &mut known)
        .await
        .unwrap();
    let batch = Batch {
        epoch,
        seq: 1,
        rows: std::sync::Arc::new(rows),
    };
    let mut ids = Ids::default();
    assert_eq!(
        store(&mut client, "localnet", &batch, &mut ids)
            .await
            .unwrap(),
        Flushed::Stored
    );
    // The same batch again (its commit unanswered, say) is not stored twice.
    assert_eq!(
        store(&mut client, "localnet", &batch, &mut ids)
            .await
            .unwrap(),
        Flushed::AlreadyStored
    );
    // A later epoch fences this one off.
    client
        .execute("UPDATE history_writers SET epoch = epoch + 1", &[])
        .await
        .unwrap();
    let late = Batch { seq: 2, ..batch };
    assert_eq!(
        store(&mut client, "localnet", &late, &mut ids)
            .await
            .unwrap(),
        Flushed::Fenced
    );
    let partition: String = client
        .query_one("SELECT tableoid::regclass::text FROM history_points", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        partition,
        format!("history_points_p{}", day.format("%Y%m%d"))
    );
}
