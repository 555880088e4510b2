//! Replicas behind the shipped HAProxy configuration (`ops/haproxy/`): a
//! rolling restart of every replica, drained one by one, costs a client no
//! failed read or write, and a subscriber no refused stream, no event and no
//! snapshot after its first.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::fixtures::replicas::{balanced, replica};
use crate::process::{Served, sigterm, wait_until_up};

async fn healthy(http: &reqwest::Client, port: u16) -> bool {
    let url = format!("http://127.0.0.1:{port}/api/health");
    matches!(http.get(url).send().await, Ok(res) if res.status().as_u16() == 200)
}

#[actix_rt::test]
async fn a_rolling_restart_behind_haproxy_fails_no_request() {
    let db = TestDb::create().await;
    let client = db.connect().await;
    // Migrated by the first replica; then a pool the answers include.
    let ports: [u16; 2] = free_ports();
    let mut replicas = vec![replica(&db, ports[0])];
    let http = reqwest::Client::new();
    wait_until_up(&http, &format!("http://127.0.0.1:{}", ports[0])).await;
    let pool = crate::fixtures::feeds::seed(&client).await;
    replicas.push(replica(&db, ports[1]));
    let lb = balanced(&ports).await;
    let base = lb.url.clone();
    assert!(
        eventually(Duration::from_secs(10), async || {
            matches!(http.get(format!("{base}/api/pools")).send().await,
                Ok(res) if res.status().as_u16() == 200)
        })
        .await,
        "the balancer serves"
    );

    // A poller and a subscriber through the balancer, for the whole restart.
    let done = Arc::new(AtomicBool::new(false));
    let (answered, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let poller = {
        let (http, base, done) = (http.clone(), base.clone(), done.clone());
        let (answered, failed) = (answered.clone(), failed.clone());
        tokio::spawn(async move {
            let mut failures = Vec::new();
            let mut n = 0u64;
            while !done.load(Relaxed) {
                // Reads, and every fourth request a write: a POST once sent
                // is never retried by the balancer, so only the drain keeps
                // it from a replica that is closing.
                n += 1;
                let request = if n.is_multiple_of(4) {
                    http.post(format!("{base}/api/transactions"))
                        .json(&serde_json::json!({
                            "signature": format!("through-the-balancer-{n}"),
                            "wallet": lendex::domain::pubkey::Pubkey::new_unique().to_string(),
                            "action": "deposit", "amount": "1"
                        }))
                } else {
                    http.get(format!("{base}/api/pools"))
                };
                match request.send().await {
                    Ok(res) if res.status().as_u16() == 200 => {
                        answered.fetch_add(1, Relaxed);
                    }
                    other => {
                        failed.fetch_add(1, Relaxed);
                        failures.push(format!("{other:?}"));
                    }
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            failures
        })
    };
    // A subscriber that resumes with its last id, as the examples do, and
    // prices that keep moving (each move re-scores every owner).
    let (followed, subscriber) = crate::fixtures::feeds::follow(base.clone(), done.clone());
    let moving = Arc::new(AtomicBool::new(false));
    let moves = crate::fixtures::feeds::mover(
        db.url.clone(),
        pool,
        Duration::from_millis(100),
        moving.clone(),
    );
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Each replica in turn: SIGTERM (it drains), wait for its exit, start it
    // again on its port, wait until the balancer sees it up.
    for (i, port) in ports.into_iter().enumerate() {
        let started = Instant::now();
        sigterm(&replicas[i]);
        // The balancer takes it out of rotation while it still serves.
        let server = format!("r{}", i + 1);
        assert!(
            eventually(Duration::from_secs(5), async || !lb
                .in_rotation(&server)
                .await)
            .await,
            "{server} left rotation"
        );
        assert!(
            replicas[i].try_wait().unwrap().is_none(),
            "{server} was still running when the balancer let it go"
        );
        let mut old = std::mem::replace(&mut replicas[i], replica_placeholder());
        let status = tokio::task::spawn_blocking(move || old.0.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(status.success(), "r{} exit {status:?}", i + 1);
        assert!(
            started.elapsed() >= Duration::from_millis(1400),
            "it drained first"
        );
        replicas[i] = replica(&db, port);
        assert!(eventually(Duration::from_secs(20), async || healthy(&http, port).await).await);
        assert!(
            eventually(Duration::from_secs(20), async || lb
                .in_rotation(&server)
                .await)
            .await,
            "{server} back in rotation"
        );
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    moving.store(true, Relaxed);
    let ticks = moves.await.unwrap();
    assert!(
        crate::fixtures::feeds::all_caught_up(std::slice::from_ref(&followed), &ticks).await,
        "the subscriber caught up"
    );
    done.store(true, Relaxed);
    let failures = poller.await.unwrap();
    subscriber.await.unwrap();
    let followed = followed.lock().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} requests failed during the rolling restart: {:?}",
        failures.len(),
        answered.load(Relaxed) + failures.len() as u64,
        &failures[..failures.len().min(5)]
    );
    assert!(answered.load(Relaxed) > 100, "the poller kept polling");
    assert!(
        followed.refused == 0,
        "streams refused: {}",
        followed.refused
    );
    assert!(
        followed.connects >= 2,
        "the subscriber's stream was ended by its replica's drain and opened again"
    );
    assert_eq!(followed.resets, 0, "no reset");
    assert_eq!(followed.snapshots, 1, "no snapshot after the first");
    followed.check(&ticks).expect("every move once");
}

/// Stands in for a replica between its stop and its restart.
fn replica_placeholder() -> Served {
    Served(Command::new("true").spawn().unwrap())
}
