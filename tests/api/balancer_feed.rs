//! The liquidation feed through HAProxy (docs/design.md §13): subscribers follow
//! the feed with their `Last-Event-ID`, as the examples do, while replicas die
//! or are restarted under them, and every price move reaches every subscriber
//! exactly once, with no snapshot after the first.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::fixtures::feeds::*;
use crate::fixtures::replicas::{balanced, replica};

#[actix_rt::test]
async fn a_replica_killed_mid_move_costs_no_subscriber_an_event() {
    let db = TestDb::create().await;
    let client = db.connect().await;
    let ports: [u16; 3] = free_ports();
    let http = reqwest::Client::new();
    let mut replicas = vec![replica(&db, ports[0])];
    crate::process::wait_until_up(&http, &format!("http://127.0.0.1:{}", ports[0])).await;
    let pool = seed(&client).await;
    replicas.push(replica(&db, ports[1]));
    replicas.push(replica(&db, ports[2]));
    let lb = balanced(&ports).await;
    let base = lb.url.clone();

    // 100 subscribers through the balancer, spread over the three replicas.
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (followers, tasks): (Vec<_>, Vec<_>) =
        (0..100).map(|_| follow(base.clone(), done.clone())).unzip();
    assert!(
        eventually(Duration::from_secs(20), async || followers
            .iter()
            .all(|f| f.lock().unwrap().first_snapshot.is_some()))
        .await,
        "every subscriber has its snapshot"
    );

    // Prices move every 100 ms; a second in, replica r1 is killed.
    let moving = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let moves = mover(
        db.url.clone(),
        pool,
        Duration::from_millis(100),
        moving.clone(),
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let killed = Instant::now();
    replicas[0].kill().unwrap();
    let at_kill: i64 = client
        .query_one("SELECT tick FROM feed_clock", &[])
        .await
        .unwrap()
        .get(0);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    moving.store(true, std::sync::atomic::Ordering::Relaxed);
    let ticks = moves.await.unwrap();
    assert!(ticks.len() >= 10, "prices moved: {ticks:?}");
    assert!(
        all_caught_up(&followers, &ticks).await,
        "every subscriber caught up"
    );
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    for task in tasks {
        task.await.unwrap();
    }

    let mut moved_by_kill = 0;
    let mut caught_up = Duration::ZERO;
    for (i, f) in followers.iter().enumerate() {
        let f = f.lock().unwrap();
        assert_eq!(f.resets, 0, "subscriber {i}: no reset");
        assert_eq!(
            f.snapshots, 1,
            "subscriber {i}: no snapshot after the first"
        );
        if let Err(e) = f.check(&ticks) {
            panic!("subscriber {i}: {e}");
        }
        moved_by_kill += usize::from(f.connects > 1);
        for (tick, _, at) in &f.events {
            if *tick <= at_kill as u64 && *at > killed {
                caught_up = caught_up.max(*at - killed);
            }
        }
    }
    assert!(
        moved_by_kill > 0,
        "some subscribers were on the killed replica"
    );
    eprintln!(
        "{moved_by_kill} of 100 subscribers moved by the kill; the last caught up {caught_up:?} after it"
    );
}
