//! Webhooks at load (docs/design.md §18), against the release build on the
//! synthetic market: receivers of our own on loopback answer 204 and note
//! when each delivery id first arrived. Pool 0's price is flipped by SQL
//! (every owner holds it, so each flip crosses every owner's line) in three
//! phases of `rounds` each: no webhook, `webhooks` registered, none again.
//! Each flip is timed to the stream's last event (P2), and with webhooks
//! each delivery from its change's commit (the log's time of the tick) to
//! its arrival at the receiver, whose 204 follows at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use chrono::{DateTime, Utc};

use crate::feed::{p50_p99, round, subscribe};

type Arrivals = Arc<Mutex<HashMap<String, SystemTime>>>;

/// Answers every POST with 204, noting each webhook-id's first arrival.
fn receive(listen: &str) -> Arrivals {
    let arrivals: Arrivals = Arc::default();
    let noted = arrivals.clone();
    let server = HttpServer::new(move || {
        let noted = noted.clone();
        App::new().default_service(web::to(move |req: HttpRequest| {
            let noted = noted.clone();
            async move {
                let at = SystemTime::now();
                if let Some(id) = req
                    .headers()
                    .get("webhook-id")
                    .and_then(|v| v.to_str().ok())
                {
                    noted.lock().unwrap().entry(id.to_string()).or_insert(at);
                }
                HttpResponse::NoContent().finish()
            }
        }))
    })
    .workers(1)
    .disable_signals()
    .bind(listen)
    .expect("the receivers' address");
    actix_rt::spawn(server.run());
    arrivals
}

/// Registers `n` webhooks of every owner at 1 WAD, each its own path on
/// `listen`, from the change log's tick now on.
async fn register(db: &tokio_postgres::Client, listen: &str, n: usize) -> Vec<String> {
    let ids: Vec<String> = (0..n).map(|i| format!("wh_{:024x}", 0xbe00 + i)).collect();
    for (i, id) in ids.iter().enumerate() {
        db.execute(
            "INSERT INTO webhooks (id, cluster, url, below_wad, secret, created_by, created_tick)
             SELECT $1, 'localnet', $2, 1000000000000000000,
                 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=', 'load', tick
             FROM feed_clock",
            &[id, &format!("http://{listen}/hook/{i}")],
        )
        .await
        .expect("register a webhook");
    }
    ids
}

/// Waits until every delivery of change `tick` is delivered (at most 30 s;
/// a change's deliveries are stored together, `at_least` of them); each
/// one's time from its change's commit to its arrival.
async fn delivered(
    db: &tokio_postgres::Client,
    arrivals: &Arrivals,
    tick: u64,
    at_least: usize,
) -> Vec<Duration> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let change = format!("%.{tick}");
    loop {
        let rows = db
            .query(
                "SELECT delivery_id, committed_at, status FROM webhook_deliveries WHERE change_id LIKE $1",
                &[&change],
            )
            .await
            .unwrap();
        let done = rows
            .iter()
            .filter(|r| r.get::<_, &str>(2) == "delivered")
            .count();
        if (rows.len() >= at_least && done == rows.len()) || Instant::now() > deadline {
            let arrivals = arrivals.lock().unwrap();
            return rows
                .iter()
                .filter_map(|r| {
                    let committed: DateTime<Utc> = r.get(1);
                    let at = arrivals.get(r.get::<_, &str>(0))?;
                    DateTime::<Utc>::from(*at)
                        .signed_duration_since(committed)
                        .to_std()
                        .ok()
                })
                .collect();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub async fn latency(
    url: &str,
    api: &str,
    listen: &str,
    webhooks: usize,
    owners: usize,
    rounds: usize,
    low_percent: i64,
) {
    let mut db = crate::connect(url).await;
    let arrivals = receive(listen);
    let mut rx = subscribe(api).await;
    let base = crate::market::pool_price(0);
    let parts = owners.div_ceil(1_000);
    let mut flip = 0usize;
    let mut phase = async |with: usize, rx: &mut _, db: &mut tokio_postgres::Client| {
        let ids = register(db, listen, with).await;
        if with > 0 {
            // The replicas read the webhooks every second.
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        let (mut last, mut deliveries, mut slowest) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            let down = flip.is_multiple_of(2);
            let price = if down { base * low_percent / 100 } else { base };
            flip += 1;
            let started = Instant::now();
            let tick = crate::market::move_pool_0(db, price).await;
            let Some((_, l, events)) = round(rx, started, Duration::from_millis(300)).await else {
                println!("  no event within 10 s");
                continue;
            };
            last.push((down, l));
            if with > 0 {
                let took = delivered(db, &arrivals, tick, with * parts).await;
                let max = took.iter().max().copied().unwrap_or_default();
                println!(
                    "  {events} events, last after {l:?}; {} deliveries, last 2xx {max:?} after commit",
                    took.len()
                );
                slowest.push(max);
                deliveries.extend(took);
            } else {
                println!("  {events} events, last after {l:?}");
            }
        }
        for id in ids {
            db.execute("DELETE FROM webhooks WHERE id = $1", &[&id])
                .await
                .unwrap();
        }
        (last, deliveries, slowest)
    };
    println!("== no webhook ({rounds} flips)");
    let (mut none, _, _) = phase(0, &mut rx, &mut db).await;
    println!("== {webhooks} webhooks ({rounds} flips)");
    let (with, mut deliveries, mut slowest) = phase(webhooks, &mut rx, &mut db).await;
    println!("== no webhook again ({rounds} flips)");
    let (again, _, _) = phase(0, &mut rx, &mut db).await;
    none.extend(again);
    // Flips down (owners sink) and up (they recover) take apart: each
    // direction compared alone, then their mean.
    let mean = |of: &[(bool, Duration)], down: bool| -> f64 {
        let v: Vec<f64> = of
            .iter()
            .filter(|(d, _)| *d == down)
            .map(|(_, l)| l.as_secs_f64())
            .collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let ms = |s: f64| s * 1e3;
    let (nd, nu, wd, wu) = (
        mean(&none, true),
        mean(&none, false),
        mean(&with, true),
        mean(&with, false),
    );
    println!(
        "P2 (flip -> last SSE event) mean, down / up: no webhook {:.2} / {:.2} ms, {webhooks} webhooks {:.2} / {:.2} ms: none/with {:.3} / {:.3}, both {:.3}",
        ms(nd),
        ms(nu),
        ms(wd),
        ms(wu),
        nd / wd,
        nu / wu,
        (nd + nu) / (wd + wu)
    );
    if !deliveries.is_empty() {
        let (d50, d99) = p50_p99(&mut deliveries);
        let (s50, s99) = p50_p99(&mut slowest);
        println!(
            "deliveries ({}): commit -> 2xx median {d50:?}, p99 {d99:?}; a flip's last delivery median {s50:?}, p99 {s99:?}",
            deliveries.len()
        );
    }
}
