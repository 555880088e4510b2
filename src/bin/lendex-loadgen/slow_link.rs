//! `slow-link`: what a subscriber on a slower link than loopback absorbs when
//! one move changes every owner at once (a crash: 25,000 events, tens of MB).
//! Each subscriber follows the feed with the typed client (which resumes with
//! its last id) through a proxy carrying at most its link's rate; a
//! reference follows on loopback. Pool 0 sinks every owner, then lifts them
//! back, round after round. For each link and round: whether the server
//! dropped it for falling `cache.subscriber_max_lag_bytes` behind, whether
//! its resume found its id in the replay window (`cache.replay_bytes`: the
//! missed events exactly) or got a `reset` and a new snapshot, and how long
//! after the commit it held the state after the move. The reference's
//! events of the move are what a link must hold; a round in which the
//! reference itself was dropped (two saturated cores can leave a loopback
//! reader 4 MiB behind too) has no such list: it is named and left out.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lendex_testkit::proxy::TcpProxy;

use crate::feed::p50_p99;
use crate::follow::{Seen, follow};
use crate::{connect, market};

/// How long a round may take before a subscriber counts as not caught up.
const ROUND_LIMIT: Duration = Duration::from_secs(120);
/// A subscriber that received nothing for this long has taken all it will.
const QUIET: Duration = Duration::from_secs(1);

/// One subscriber's round.
struct Round {
    /// From the commit to the state after the move (None: not within the limit).
    caught_up: Option<Duration>,
    dropped: bool,
    reset: bool,
    /// It holds exactly the move's events, each once (no snapshot in their place).
    exact: bool,
}

/// Whether `s` holds the state after the move at `tick`, whose events the
/// reference holds as `expected`, and since when.
fn caught_up(s: &Seen, tick: u64, expected: &[(u64, u64)], now: Instant) -> Option<Instant> {
    if s.of_tick(tick) == expected {
        return s.last_of_tick(tick);
    }
    // Else a snapshot taken at or after the move, wholly received.
    let (taken, last) = *s.snapshots.last()?;
    let quiet = s.last_at.is_some_and(|at| now - at >= QUIET);
    (taken >= tick && quiet).then_some(last)
}

pub async fn run(url: &str, api: &str, links_mb: &[f64], rounds: usize, percent: i64) {
    let mut db = connect(url).await;
    let stop = Arc::new(AtomicBool::new(false));
    let reference = follow(api.to_string(), stop.clone());
    let mut links = Vec::new();
    for &mb in links_mb {
        let proxy = TcpProxy::start(api).await;
        proxy.throttle((mb * 1_000_000.0) as u64);
        let seen = follow(proxy.url.clone(), stop.clone());
        links.push((mb, proxy, seen, Vec::<Round>::new()));
    }
    let all_connected = |links: &[(f64, TcpProxy, Arc<Mutex<Seen>>, Vec<Round>)]| {
        !reference.lock().unwrap().snapshots.is_empty()
            && links
                .iter()
                .all(|l| !l.2.lock().unwrap().snapshots.is_empty())
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while !all_connected(&links) {
        assert!(Instant::now() < deadline, "subscribers did not all connect");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(QUIET).await;

    let base = market::pool_price(0);
    let mut reference_last = Vec::new();
    let mut reference_dropped_rounds = 0;
    for round in 0..rounds {
        let price = if round % 2 == 0 {
            base * percent / 100
        } else {
            base
        };
        let before: Vec<(u32, u32)> = links
            .iter()
            .map(|l| {
                let s = l.2.lock().unwrap();
                (s.resyncs, s.resets)
            })
            .collect();
        let (bytes_before, reference_drops) = {
            let r = reference.lock().unwrap();
            (r.data_bytes, r.resyncs)
        };
        let moved_at = Instant::now();
        let tick = market::move_pool_0(&mut db, price).await;

        // The reference's events of the move, once it has been quiet.
        let expected = loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let r = reference.lock().unwrap();
            let quiet = r.last_at.is_some_and(|at| at.elapsed() >= QUIET);
            // Dropped before any event of the move: its new snapshot holds it.
            if quiet && (r.last_of_tick(tick).is_some() || r.resyncs > reference_drops) {
                break r.of_tick(tick);
            }
            assert!(
                moved_at.elapsed() < ROUND_LIMIT,
                "the reference saw no move"
            );
        };
        let (moved_bytes, reference_took, reference_dropped) = {
            let r = reference.lock().unwrap();
            (
                r.data_bytes - bytes_before,
                r.last_of_tick(tick)
                    .map_or(Duration::ZERO, |last| last - moved_at),
                r.resyncs > reference_drops,
            )
        };
        if reference_dropped {
            println!(
                "round {round}: the loopback reference was dropped too ({} events of the move before it, {:.1} MB with its new snapshot); left out",
                expected.len(),
                moved_bytes as f64 / 1e6
            );
            reference_dropped_rounds += 1;
            // The links settle before the next move.
            while moved_at.elapsed() < ROUND_LIMIT
                && !links.iter().all(|l| {
                    let s = l.2.lock().unwrap();
                    s.last_at.is_some_and(|at| at.elapsed() >= QUIET)
                })
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            continue;
        }
        reference_last.push(reference_took);
        let mut pending: Vec<usize> = (0..links.len()).collect();
        while !pending.is_empty() && moved_at.elapsed() < ROUND_LIMIT {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let now = Instant::now();
            pending.retain(|&i| {
                caught_up(&links[i].2.lock().unwrap(), tick, &expected, now).is_none()
            });
        }
        for (i, link) in links.iter_mut().enumerate() {
            let s = link.2.lock().unwrap();
            let at = caught_up(&s, tick, &expected, Instant::now());
            let exact = s.of_tick(tick) == expected && s.repeated_in(tick) == 0;
            let outcome = Round {
                caught_up: at.map(|at| at.saturating_duration_since(moved_at)),
                dropped: s.resyncs > before[i].0,
                reset: s.resets > before[i].1,
                exact,
            };
            drop(s);
            link.3.push(outcome);
        }
        println!(
            "round {round}: {} events, {:.1} MB of event data; the reference held them after {reference_took:?}",
            expected.len(),
            moved_bytes as f64 / 1e6
        );
        tokio::time::sleep(QUIET).await;
    }
    stop.store(true, Ordering::Relaxed);

    assert!(
        !reference_last.is_empty(),
        "the reference was dropped in every round"
    );
    let (r50, r99) = p50_p99(&mut reference_last);
    println!(
        "loopback reference: the move's last event median {r50:?} (max {r99:?}) after its commit; \
         dropped itself in {reference_dropped_rounds} of {rounds} rounds (those left out)"
    );
    for (mb, proxy, seen, outcome) in &links {
        let mut times: Vec<Duration> = outcome.iter().filter_map(|r| r.caught_up).collect();
        let missed = outcome.len() - times.len();
        let dropped = outcome.iter().filter(|r| r.dropped).count();
        let reset = outcome.iter().filter(|r| r.reset).count();
        let exact = outcome.iter().filter(|r| r.exact).count();
        let times_text = if times.is_empty() {
            "never caught up".to_string()
        } else {
            let (p50, max) = p50_p99(&mut times);
            format!("caught up after median {p50:?} (max {max:?})")
        };
        let s = seen.lock().unwrap();
        println!(
            "link {mb} MB/s ({:.0} Mbit/s): {times_text}; {} rounds: dropped in {dropped}, reset (a new snapshot) in {reset}, \
             exact in {exact}, not within {ROUND_LIMIT:?} in {missed}; {} connections ({} accepted by its proxy)",
            mb * 8.0,
            outcome.len(),
            s.connects,
            proxy.accepted.load(Ordering::Relaxed),
        );
    }
}
