//! History at scale (docs/design.md §12), for `scripts/load-test-history`:
//! - `history-seed`: `days` of history for `owners`, written straight into the
//!   partitions by SQL at a realistic rate: `points_per_day` health points an
//!   owner (an oracle moving about 3% a day crosses a 1% grid some (3/1)^2 = 9
//!   times a day), one price row per pool every 10 s, a market sample every
//!   10 s with its rollups, and a few thousand events a day. Values carry
//!   every digit, as real sums do (a value's size on disk depends on them);
//! - `history-reads`: p50 and p99 of the four reads the issue names, one
//!   client, random owners;
//! - `history-store`: a price move of the pool every owner holds, timed until
//!   its points are stored, with the flushes it took.

use std::time::{Duration, Instant};

use chrono::{Days, Utc};
use rand::Rng;
use serde_json::Value;

use crate::connect;

/// A number of exactly `digits` random digits (the first one not 0), as a
/// SQL expression: one draw of random() holds about 15 digits only, so it is
/// made of parts of at most 9.
fn random_digits(digits: u32) -> String {
    let mut terms = vec![format!(
        "(10^{} + floor(random() * 9 * 10^{}))::numeric * 1e{}",
        (digits - 1) % 9,
        (digits - 1) % 9,
        9 * ((digits - 1) / 9)
    )];
    for p in (0..(digits - 1) / 9).rev() {
        terms.push(format!("floor(random() * 1e9)::numeric * 1e{}", 9 * p));
    }
    format!("({})", terms.join(" + "))
}

pub async fn seed(url: &str, owners: i64, days: u64, points_per_day: i64, pools: i64) {
    let started = Instant::now();
    let db = connect(url).await;
    db.batch_execute(
        "TRUNCATE history_points, history_events, history_prices, history_market,
             history_market_buckets, history_owners, history_pools, history_writers
         RESTART IDENTITY",
    )
    .await
    .unwrap();
    let today = Utc::now().date_naive();
    let first = today - Days::new(days - 1);
    for d in 0..days + 3 {
        let day = first + Days::new(d);
        db.execute("SELECT lendex_history_make_day($1)", &[&day])
            .await
            .unwrap();
    }
    let keys: Vec<String> = (0..owners)
        .map(|o| crate::key(&format!("history owner {o}")))
        .collect();
    db.execute(
        &format!(
            "INSERT INTO history_owners (cluster, owner, last_health_factor_wad, last_bad_debt, last_at)
             SELECT 'localnet', o, {}, false, now() FROM unnest($1::text[]) o",
            random_digits(19)
        ),
        &[&keys],
    )
    .await
    .unwrap();
    let pool_keys: Vec<String> = (0..pools)
        .map(|p| crate::key(&format!("history pool {p}")))
        .collect();
    db.execute(
        "INSERT INTO history_pools (cluster, pool, last_price, last_expo, last_at)
         SELECT 'localnet', p, 100000000, -8, now() FROM unnest($1::text[]) p",
        &[&pool_keys],
    )
    .await
    .unwrap();
    // A health factor of 1.x to 9.x WAD (19 digits); sums of $1,000 to
    // $9,999 with 18 decimals (22 digits), as a retail account holds.
    let (hf, value) = (random_digits(19), random_digits(22));
    let mut points = 0i64;
    for d in 0..days {
        let day = first + Days::new(d);
        let day_started = Instant::now();
        // Owners in id order within each second, the way a flush lands them.
        let n: u64 = db
            .execute(
                &format!(
                    "INSERT INTO history_points (owner_id, cause, at, slot, health_factor_wad,
                         collateral_value_wad, debt_value_wad)
                     SELECT o.id, 2, $1::date + random() * interval '1 day',
                         300000000 + (random() * 216000)::bigint, {hf}, {value}, {value}
                     FROM history_owners o, generate_series(1, $2::bigint) k"
                ),
                &[&day, &points_per_day],
            )
            .await
            .unwrap();
        points += n as i64;
        db.execute(
            "INSERT INTO history_prices (pool_id, at, slot, price, conf, expo)
             SELECT p.id, $1::date + s * interval '10 s', 300000000 + s,
                 (100000000 + random() * 1000000)::bigint, (random() * 100000)::bigint::numeric, -8
             FROM history_pools p, generate_series(0, 8639) s",
            &[&day],
        )
        .await
        .unwrap();
        db.execute(
            &format!(
                "INSERT INTO history_market (cluster, at, owners, owners_under_water, owners_at_risk,
                     debt_value_wad_under_water, bad_debt_value_wad, deposits_value_wad,
                     borrows_value_wad)
                 SELECT 'localnet', $1::date + s * interval '10 s', $2, (random() * 500)::bigint,
                     (random() * 2000)::bigint, {value} * 1000, {value}, {value} * 50000,
                     {value} * 30000
                 FROM generate_series(0, 8639) s"
            ),
            &[&day, &owners],
        )
        .await
        .unwrap();
        db.execute(
            "INSERT INTO history_events (cluster, kind, owner_id, at, slot, health_factor_before_wad,
                 health_factor_after_wad, pool_ids)
             SELECT 'localnet', 1 + (random() * 2)::int, 1 + (random() * ($2::bigint - 1))::int,
                 $1::date + random() * interval '1 day', 300000000, 1000000000000000000,
                 999000000000000000, ARRAY[1 + (random() * 9)::int]
             FROM generate_series(1, 3000)",
            &[&day, &owners],
        )
        .await
        .unwrap();
        println!(
            "day {day}: {n} points in {:.1}s",
            day_started.elapsed().as_secs_f64()
        );
    }
    // The market's rollups, as the writer keeps them.
    for (code, width) in [
        (1i16, "1 minute"),
        (2, "5 minutes"),
        (3, "1 hour"),
        (4, "1 day"),
    ] {
        db.execute(
            &format!(
                "INSERT INTO history_market_buckets
                 SELECT cluster, $1, date_bin('{width}', at, timestamptz '1970-01-01'), count(*), max(at),
                     (array_agg(owners ORDER BY at DESC))[1], (array_agg(owners_under_water ORDER BY at DESC))[1],
                     max(owners_under_water), (array_agg(owners_at_risk ORDER BY at DESC))[1],
                     (array_agg(debt_value_wad_under_water ORDER BY at DESC))[1],
                     (array_agg(bad_debt_value_wad ORDER BY at DESC))[1],
                     (array_agg(deposits_value_wad ORDER BY at DESC))[1],
                     (array_agg(borrows_value_wad ORDER BY at DESC))[1]
                 FROM history_market GROUP BY 1, 3"
            ),
            &[&code],
        )
        .await
        .unwrap();
    }
    // The owners' last values above hold every point, as a leader's checkpoint
    // would: a replica taking over reads only what came after it.
    db.execute(
        "INSERT INTO history_writers (cluster, epoch, flushed, checkpoint_at)
         VALUES ('localnet', 1, 0, now())",
        &[],
    )
    .await
    .unwrap();
    // One at a time: VACUUM cannot run inside the transaction a batch makes.
    for table in [
        "history_points",
        "history_events",
        "history_prices",
        "history_market",
        "history_market_buckets",
        "history_owners",
    ] {
        db.batch_execute(&format!("VACUUM ANALYZE {table}"))
            .await
            .unwrap();
    }
    let bytes: i64 = db
        .query_one(
            "SELECT sum(pg_total_relation_size(part::regclass))::bigint
             FROM lendex_history_partitions() WHERE parent = 'history_points'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    println!(
        "seeded {points} points of {owners} owners over {days} days in {:.0}s; {:.1} bytes a point on disk, indexes included",
        started.elapsed().as_secs_f64(),
        bytes as f64 / points as f64
    );
}

fn percentiles(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let at = |p: f64| {
        let i = ((samples.len() as f64 * p).ceil() as usize).clamp(1, samples.len()) - 1;
        samples[i].as_secs_f64() * 1000.0
    };
    (at(0.5), at(0.99))
}

pub async fn reads(url: &str, api: &str, requests: usize, days: i64) {
    let db = connect(url).await;
    let owners: Vec<String> = db
        .query(
            "SELECT owner FROM history_owners WHERE cluster = 'localnet'",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let http = reqwest::Client::new();
    let now_ms = Utc::now().timestamp_millis();
    let from = now_ms - days * 86_400_000;
    let mut rng = rand::thread_rng();
    // The same owners twice: a first pass that reads from disk (cold), a
    // second from memory (the owners a dApp shows are the ones in use).
    let picked: Vec<String> = (0..requests)
        .map(|_| owners[rng.gen_range(0..owners.len())].clone())
        .collect();
    let timed = async |label: &str, path: &dyn Fn(&str) -> String| {
        let mut samples = Vec::with_capacity(requests);
        let mut rows = 0usize;
        for owner in &picked {
            let url = format!("{api}{}", path(owner));
            let started = Instant::now();
            let res = http.get(&url).send().await.unwrap();
            let status = res.status();
            let body: Value = res.json().await.unwrap();
            samples.push(started.elapsed());
            assert!(status.is_success(), "{url}: {status} {body}");
            rows += ["points", "events"]
                .iter()
                .filter_map(|k| body[*k].as_array())
                .map(Vec::len)
                .sum::<usize>();
        }
        let (p50, p99) = percentiles(samples);
        println!(
            "{label}: p50 {p50:.2} ms, p99 {p99:.2} ms ({requests} requests, {:.0} rows each)",
            rows as f64 / requests as f64
        );
    };
    for pass in ["cold", "warm"] {
        timed(&format!("{pass}: owner, 30 days raw"), &|o: &str| {
            format!("/api/positions/{o}/history?from={from}&to={now_ms}&limit=5000")
        })
        .await;
        timed(&format!("{pass}: owner, 30 days at 1h"), &|o: &str| {
            format!("/api/positions/{o}/history?from={from}&to={now_ms}&resolution=1h&limit=1000")
        })
        .await;
        timed(&format!("{pass}: events, a page of 100"), &|_: &str| {
            format!("/api/history/events?from={}&limit=100", now_ms - 86_400_000)
        })
        .await;
        timed(
            &format!("{pass}: events of one kind, a page of 100"),
            &|_: &str| {
                format!(
                    "/api/history/events?kind=under&from={}&limit=100",
                    now_ms - 86_400_000
                )
            },
        )
        .await;
        timed(&format!("{pass}: market, 30 days at 1h"), &|_: &str| {
            format!("/api/history/market?from={from}&to={now_ms}&resolution=1h&limit=1000")
        })
        .await;
    }
}

/// Whether the service records history now (GET /api/health).
async fn recording(api: &str) -> bool {
    let health: serde_json::Value = reqwest::get(format!("{api}/api/health"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    health["checks"]["history"]["recording"] == true
}

/// The flushes the service has made so far (from /metrics).
async fn flushes(api: &str) -> f64 {
    let text = reqwest::get(format!("{api}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("lendex_history_flush_duration_seconds_count "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

pub async fn store(url: &str, api: &str, rounds: usize) {
    let db = connect(url).await;
    // The leader records once it has read its baselines back.
    let started = Instant::now();
    while !recording(api).await {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "history is not recording"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let pool0 = crate::key("load pool 0");
    let base = crate::market::pool_price(0);
    for round in 0..rounds {
        let price = if round % 2 == 0 {
            base * 70 / 100
        } else {
            base
        };
        let before: i64 = db
            .query_one("SELECT count(*) FROM history_points", &[])
            .await
            .unwrap()
            .get(0);
        let flushed = flushes(api).await;
        let started = Instant::now();
        db.execute(
            "UPDATE pools SET oracle_price = $1 WHERE cluster = 'localnet' AND pool_address = $2",
            &[&price, &pool0],
        )
        .await
        .unwrap();
        // Until the count stops growing for 1.5 s (the flush interval and a half).
        let (mut last, mut last_change) = (before, started.elapsed());
        while started.elapsed() - last_change < Duration::from_millis(1500)
            && started.elapsed() < Duration::from_secs(30)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let now: i64 = db
                .query_one("SELECT count(*) FROM history_points", &[])
                .await
                .unwrap()
                .get(0);
            if now != last {
                last = now;
                last_change = started.elapsed();
            }
        }
        println!(
            "round {round}: {} points stored {:.0} ms after the move, in {} flushes",
            last - before,
            last_change.as_secs_f64() * 1000.0,
            flushes(api).await - flushed
        );
    }
}
