//! `failover`: N subscribers follow the feed through a load balancer, as the
//! examples do (reconnecting with their last id), while a price move sinks
//! thousands of owners and the replica serving some of them is killed
//! (SIGKILL) mid-move (a few milliseconds after the commit, while it renders
//! and sends the move's frames). Reports when the last subscriber held every event of
//! the move, and checks each against a reference stream on a replica that
//! lives: the same events, each once, no reset, no second snapshot.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::follow::{Seen, follow};
use crate::{connect, market};

pub async fn run(
    url: &str,
    api: &str,
    reference: &str,
    streams: usize,
    kill_pid: u32,
    percent: i64,
    kill_after: Duration,
) {
    let mut db = connect(url).await;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let truth = follow(reference.to_string(), stop.clone());
    let followers: Vec<_> = (0..streams)
        .map(|_| follow(api.to_string(), stop.clone()))
        .collect();
    let all = || std::iter::once(&truth).chain(followers.iter());
    let deadline = Instant::now() + Duration::from_secs(60);
    while !all().all(|f| !f.lock().unwrap().snapshots.is_empty()) {
        assert!(Instant::now() < deadline, "subscribers did not all connect");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;

    // The move, and the kill while its frames go out.
    let base = market::pool_price(0);
    let moved_at = Instant::now();
    let tick = market::move_pool_0(&mut db, base * percent / 100).await;
    tokio::time::sleep(kill_after).await;
    let killed = Instant::now();
    let status = std::process::Command::new("kill")
        .args(["-KILL", &kill_pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success(), "replica {kill_pid} killed");

    // The move's events as the reference saw them; every subscriber must
    // come to hold the same.
    let wanted = |s: &Seen| s.of_tick(tick);
    let deadline = Instant::now() + Duration::from_secs(60);
    let expected = loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let reference = wanted(&truth.lock().unwrap());
        let settled = !reference.is_empty()
            && followers
                .iter()
                .all(|f| wanted(&f.lock().unwrap()) == reference);
        if settled || Instant::now() > deadline {
            break reference;
        }
    };
    stop.store(true, std::sync::atomic::Ordering::Relaxed);

    let mut caught_up = Duration::ZERO;
    let (mut moved, mut resynced, mut bad) = (0, 0, Vec::new());
    for (i, f) in followers.iter().enumerate() {
        let s = f.lock().unwrap();
        moved += usize::from(s.connects > 1);
        resynced += usize::from(s.resyncs > 0);
        let got = wanted(&s);
        let twice = s.events.values().filter(|e| e.2 > 1).count();
        if got != expected || s.resets > 0 || s.snapshots.len() != 1 || twice > 0 {
            bad.push(format!(
                "subscriber {i}: {} of {} events, {} resets, {} snapshots, {twice} twice",
                got.len(),
                expected.len(),
                s.resets,
                s.snapshots.len()
            ));
        }
        for ((t, _), (_, at, _)) in &s.events {
            if *t == tick {
                caught_up = caught_up.max(at.saturating_duration_since(killed));
            }
        }
    }
    let last_reference = truth
        .lock()
        .unwrap()
        .last_of_tick(tick)
        .map_or(Duration::ZERO, |at| at - moved_at);
    println!(
        "move of {} events (tick {tick}); {moved} of {streams} subscribers reconnected \
         ({resynced} of them dropped for falling behind, the rest by the kill); \
         the reference held the move {last_reference:?} after it was committed",
        expected.len()
    );
    println!(
        "kill -> last subscriber caught up: {caught_up:?}; {} of {streams} subscribers exact (no event lost or repeated, no reset, one snapshot)",
        streams - bad.len()
    );
    for line in bad.iter().take(10) {
        println!("  {line}");
    }
}
