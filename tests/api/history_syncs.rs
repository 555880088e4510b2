//! History records every committed state of an owner that the rule picks
//! (a first point, and every change of its positions), however the changes
//! reach the engine: three
//! on-demand syncs, each answered 200, are three points, also when the
//! machine is busy and one read of the change log carries several of them.

use std::time::Duration;

use lendex::domain::wad::WAD;
use serde_json::{Value, json};

use crate::chain_support::*;
use crate::common::*;
use crate::fixtures::history::points;

/// Keeps both cores busy until dropped (the other work of a busy machine).
struct Busy(
    Vec<std::thread::JoinHandle<()>>,
    std::sync::Arc<std::sync::atomic::AtomicBool>,
);

impl Busy {
    fn start(threads: usize) -> Busy {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let handles = (0..threads)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                        std::hint::black_box(x);
                    }
                })
            })
            .collect();
        Busy(handles, stop)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.1.store(true, std::sync::atomic::Ordering::Relaxed);
        for h in self.0.drain(..) {
            let _ = h.join();
        }
    }
}

#[actix_rt::test]
async fn three_syncs_answered_200_are_three_points_on_a_busy_machine() {
    let t = ChainApp::start_with(|c| {
        c.sync.interval_seconds = 3600;
        c.history.flush_interval_ms = 100;
    })
    .await;
    // Three pools at $1 (6 decimals, threshold 0.8); history records once
    // their registrations are stored as prices (this replica leads).
    let mut pools = Vec::new();
    for _ in 0..3 {
        let (pool, _) = t.create_and_register(6, Some(100_000_000), Some(-8)).await;
        pools.push(pool);
    }
    let owner = Wallet::new();
    let owner_key = key(&owner.pubkey());
    // 1000 deposited; then 200 borrowed, then 300 more: no debt, 4.0, 1.6.
    let steps: [(u64, u64); 3] = [(1_000_000_000, 0), (0, 200_000_000), (0, 300_000_000)];
    let expected: Vec<String> = vec![
        u128::MAX.to_string(),
        (4 * WAD).to_string(),
        (16 * WAD / 10).to_string(),
    ];
    let _busy = Busy::start(4);
    for (pool, (deposit, borrow)) in pools.iter().zip(steps) {
        t.put_position(pool, &owner_key, deposit, borrow).await;
        let body = json!({ "pool_address": pool.to_string(), "user": owner.pubkey() });
        let (status, answer) = t.app.post("/api/positions/sync", &body).await;
        assert_eq!(status, 200, "{answer}");
    }
    let mut last: Vec<Value> = Vec::new();
    let all = eventually(Duration::from_secs(20), async || {
        last = points(&t.app, &owner.pubkey()).await;
        last.len() >= expected.len()
            && last.last().unwrap()["health_factor_wad"] == expected[2].as_str()
    })
    .await;
    let hfs: Vec<&str> = last
        .iter()
        .map(|p| p["health_factor_wad"].as_str().unwrap())
        .collect();
    assert!(all, "{hfs:?}");
    assert_eq!(hfs, expected, "{last:?}");
}
