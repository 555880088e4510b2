//! Wire-speed measurements, against a running service on a seeded
//! market:
//! - `held_polls`: N long polls of GET /api/liquidations held at once (the
//!   server's RSS before and after), one price change, and how long each
//!   took to be answered; /api/health timed all along;
//! - `resume`: a subscriber that misses at least N events reconnects with
//!   its Last-Event-ID: how long until the last missed event arrives.

use std::time::{Duration, Instant};

use reqwest::header::{ETAG, IF_NONE_MATCH};

use crate::feed::{self, p50_p99};
use crate::{connect, key, market};

/// The server's resident memory, in MB.
fn rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Flips pool 0's price by SQL (the cache hears the NOTIFY), between its
/// seeded price and `percent` of it.
async fn flip_price(db: &tokio_postgres::Client, low: bool, percent: i64) {
    let base = market::pool_price(0);
    let price = if low { base * percent / 100 } else { base };
    db.execute(
        "UPDATE pools SET oracle_price = $1 WHERE cluster = 'localnet' AND pool_address = $2",
        &[&price, &key("load pool 0")],
    )
    .await
    .unwrap();
}

/// The `lendex_long_polls_held` gauge.
async fn held_now(http: &reqwest::Client, api: &str) -> usize {
    let Ok(res) = http.get(format!("{api}/metrics")).send().await else {
        return 0;
    };
    let text = res.text().await.unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("lendex_long_polls_held "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map_or(0, |v| v as usize)
}

/// Times GETs of `url` every 50 ms until `stop` is set: (when sent, took).
fn probe(
    http: &reqwest::Client,
    url: String,
    stop: tokio::sync::watch::Receiver<bool>,
) -> actix_rt::task::JoinHandle<Vec<(Instant, Duration)>> {
    let http = http.clone();
    actix_rt::spawn(async move {
        let mut times = Vec::new();
        while !*stop.borrow() {
            let started = Instant::now();
            if http.get(&url).send().await.is_ok() {
                times.push((started, started.elapsed()));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        times
    })
}

/// "median m, p99 p, slowest s" of some times.
fn spread(mut times: Vec<Duration>) -> String {
    if times.is_empty() {
        return "none".into();
    }
    let (p50, p99) = p50_p99(&mut times);
    format!(
        "median {p50:?}, p99 {p99:?}, slowest {:?}",
        times.last().unwrap()
    )
}

/// What a held request and its release are.
struct Hold<'a> {
    label: &'a str,
    url: String,
    /// Sent as If-None-Match.
    tag: Option<String>,
    pid: u32,
    /// Timed every 50 ms all along.
    probe_url: String,
}

/// Holds `n` requests; then `release` answers them all at once. Prints the
/// RSS growth of the server while they are held, how long after the release
/// each answer (headers and body) arrived, and the probe's times while held
/// and after the release. `held` says when all are held.
async fn hold_and_release<H, R>(hold: Hold<'_>, n: usize, held: H, release: R)
where
    H: AsyncFn() -> bool,
    R: AsyncFnOnce(),
{
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let before = rss_mb(hold.pid);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let prober = probe(&http, hold.probe_url.clone(), stopped);
    let (done_tx, mut done) = tokio::sync::mpsc::unbounded_channel::<(Instant, u16)>();
    let opened = Instant::now();
    for _ in 0..n {
        let (http, url, tag, done_tx) = (
            http.clone(),
            hold.url.clone(),
            hold.tag.clone(),
            done_tx.clone(),
        );
        actix_rt::spawn(async move {
            let mut req = http.get(url);
            if let Some(tag) = tag {
                req = req.header(IF_NONE_MATCH, tag);
            }
            let status = match req.send().await {
                Ok(res) => {
                    let status = res.status().as_u16();
                    // The whole body, as a client acting on it would read it.
                    let _ = res.bytes().await;
                    status
                }
                Err(_) => 0,
            };
            let _ = done_tx.send((Instant::now(), status));
        });
    }
    drop(done_tx);
    while opened.elapsed() < Duration::from_secs(60) && !held().await {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let all_held = Instant::now();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rss_held = rss_mb(hold.pid);
    let released = Instant::now();
    release().await;
    let mut answered = Vec::with_capacity(n);
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    while let Some((at, status)) = done.recv().await {
        *statuses.entry(status).or_default() += 1;
        answered.push(at.saturating_duration_since(released));
    }
    let _ = stop.send(true);
    let probes = prober.await.unwrap_or_default();
    let first = answered.iter().min().copied().unwrap_or_default();
    let window = |from: Instant, to: Option<Instant>| -> Vec<Duration> {
        probes
            .iter()
            .filter(|(at, _)| *at >= from && to.is_none_or(|to| *at < to))
            .map(|p| p.1)
            .collect()
    };
    println!(
        "{}: {n} held, RSS {before:.0} -> {rss_held:.0} MB (+{:.0} MB); answered after the release: first {first:?}, {}; statuses {statuses:?}; probe while connecting: {}; probe while held: {}; probe after the release: {}",
        hold.label,
        rss_held - before,
        spread(answered),
        spread(window(opened, Some(all_held))),
        spread(window(all_held, Some(released))),
        spread(window(released, None)),
    );
}

/// hello-world holding `n` requests of the same body (`hello --hold-ms`),
/// released at once: what the HTTP stack alone costs.
pub async fn baseline_holds(base: &str, n: usize, pid: u32) {
    let http = reqwest::Client::new();
    let hold = Hold {
        label: "baseline, hello-world",
        url: format!("{base}/held"),
        tag: None,
        pid,
        probe_url: format!("{base}/probe"),
    };
    let count = async || {
        let count = match http.get(format!("{base}/held-count")).send().await {
            Ok(res) => res.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        count.parse::<usize>().is_ok_and(|held| held >= n)
    };
    let release = async || {
        let _ = http.get(format!("{base}/release")).send().await;
    };
    hold_and_release(hold, n, count, release).await;
}

/// What changes the held answer.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Change {
    /// Pool 0's price: every owner is re-scored (and its health factor
    /// written back) as the polls are answered.
    Price,
    /// Every pool's liquidation bonus: quotes change, no health factor does.
    Terms,
}

/// Lendex holding `polls` long polls of /api/liquidations?limit=50, answered
/// by one change; /api/health is the probe.
pub async fn held_polls(url: &str, api: &str, polls: usize, server_pid: u32, change: Change) {
    let db = connect(url).await;
    let http = reqwest::Client::new();
    let poll_url = format!("{api}/api/liquidations?limit=50");
    let first = http.get(&poll_url).send().await.expect("liquidations");
    let tag = first.headers()[ETAG].to_str().unwrap().to_string();
    let label = match change {
        Change::Price => "Lendex long polls, a price change",
        Change::Terms => "Lendex long polls, a terms change",
    };
    let hold = Hold {
        label,
        url: format!("{poll_url}&wait_ms=30000"),
        tag: Some(tag),
        pid: server_pid,
        probe_url: format!("{api}/api/health"),
    };
    let release = async || match change {
        Change::Price => flip_price(&db, true, 60).await,
        Change::Terms => {
            db.execute(
                "UPDATE pools SET liquidation_bonus_wad = liquidation_bonus_wad + 1000000000000000 WHERE cluster = 'localnet'",
                &[],
            )
            .await
            .unwrap();
        }
    };
    hold_and_release(
        hold,
        polls,
        async || held_now(&http, api).await >= polls,
        release,
    )
    .await;
    flip_price(&db, false, 60).await;
}

/// The ids of the events received before `quiet` passes without one.
async fn ids_until_quiet(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<feed::Event>,
    quiet: Duration,
) -> Vec<String> {
    let mut ids = Vec::new();
    while let Ok(Some(event)) = tokio::time::timeout(quiet, rx.recv()).await {
        ids.extend(event.id);
    }
    ids
}

pub async fn resume(url: &str, api: &str, missed: usize, rounds: usize) {
    let db = connect(url).await;
    let mut watcher = feed::connect(api, None).await;
    let mut current = ids_until_quiet(&mut watcher, Duration::from_millis(1500))
        .await
        .pop()
        .expect("someone under water: the snapshot has ids");
    let mut took = Vec::new();
    let mut low = false;
    for round in 0..rounds {
        // Cut off at `current`: changes until at least `missed` events passed
        // (ids increase, not one by one: they are numbered by commit).
        let from = current.clone();
        let mut expected: Vec<String> = Vec::new();
        while expected.len() < missed {
            low = !low;
            flip_price(&db, low, 60).await;
            expected.extend(ids_until_quiet(&mut watcher, Duration::from_millis(400)).await);
        }
        current = expected.last().expect("events came").clone();
        let asked = Instant::now();
        let mut back = feed::connect(api, Some(&from)).await;
        let mut got: Vec<String> = Vec::new();
        let mut reset = false;
        while let Ok(Some(event)) = tokio::time::timeout(Duration::from_secs(10), back.recv()).await
        {
            reset |= event.name == "reset";
            got.extend(event.id);
            if got.last() == Some(&current) {
                break;
            }
        }
        let elapsed = asked.elapsed();
        println!(
            "round {round}: {} missed events (to {current}) after {from}: {elapsed:?}{}",
            got.len(),
            if reset || got != expected {
                " (NOT resumed)"
            } else {
                ", no snapshot"
            }
        );
        took.push(elapsed);
    }
    let (m50, m99) = p50_p99(&mut took);
    println!(
        "resume after at least {missed} missed events ({rounds} rounds): median {m50:?}, slowest {m99:?}"
    );
    flip_price(&db, false, 60).await;
}
