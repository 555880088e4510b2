//! The chain misbehaving: RPC 500s, 429 with Retry-After, and hangs, injected by a
//! proxy between the service and surfpool; and the RPC rate limit measured at the
//! chain side of that proxy.

use std::time::{Duration, Instant};

use lendex::domain::pubkey::Pubkey;
use serde_json::json;

use crate::chain_support::*;
use crate::common::*;

/// A chain app whose RPC goes through a fault-injecting proxy.
async fn behind_proxy(timeout_ms: u64, max_rps: u32) -> (ChainApp, RpcProxy) {
    let chain = LocalChain::start().await;
    let proxy = RpcProxy::start(&chain.url).await;
    let t = ChainApp::start_on(chain, &proxy.url, |c| {
        c.rpc.timeout_ms = timeout_ms;
        c.rpc.max_rps = max_rps;
        c.rpc.max_concurrency = 16;
        // These tests are about the chain: the write bound is writer_lanes'
        // subject, and a suite loading two cores must not turn a slow commit
        // into a 503 here.
        c.database.write_timeout_ms = 60_000;
    })
    .await;
    (t, proxy)
}

#[actix_rt::test]
async fn rpc_faults_give_502_within_the_timeout_and_reads_keep_answering() {
    let (t, proxy) = behind_proxy(1500, 1000).await;
    let (pool, _) = t.create_and_register(6, Some(100_000_000), Some(-8)).await;
    let user = Wallet::new().pubkey();
    t.put_position(&pool, &key(&user), 10, 0).await;
    let sync = json!({ "pool_address": pool.to_string(), "user": user });
    assert_eq!(t.app.post("/api/positions/sync", &sync).await.0, 200);

    for fault in [
        Fault::ServerError,
        Fault::Hang,
        Fault::RateLimited {
            retry_after: 60,
            times: 1000,
        },
    ] {
        proxy.set(fault);
        let started = Instant::now();
        let res = t.app.post("/api/positions/sync", &sync).await;
        let took = started.elapsed();
        assert_eq!(res, (502, error("rpc unavailable")), "{fault:?}");
        assert!(
            took < Duration::from_millis(1500 + 1500),
            "{fault:?}: answered after {took:?}"
        );
        let res = t.sync_pool(&pool).await;
        assert_eq!(res, (502, error("rpc unavailable")), "{fault:?}");

        // Health says so, quickly, with HTTP 200.
        let started = Instant::now();
        let (status, health) = t.app.get("/api/health").await;
        assert!(started.elapsed() < Duration::from_secs(3));
        assert_eq!(
            (status, health["status"].clone()),
            (200, json!("degraded")),
            "{fault:?}"
        );
        assert_eq!(health["checks"]["rpc"], json!({ "ok": false, "slot": 0 }));
        assert_eq!(health["checks"]["database"]["ok"], true);

        // The index keeps answering, unchanged.
        let (status, list) = t.app.get(&format!("/api/positions/{user}")).await;
        assert_eq!(
            (status, list["positions"][0]["deposit_shares"].clone()),
            (200, json!("10"))
        );
        assert_eq!(t.app.get("/api/pools").await.0, 200);
    }

    // Back to normal: everything recovers, nothing was corrupted.
    proxy.set(Fault::Forward);
    assert_eq!(t.app.post("/api/positions/sync", &sync).await.0, 200);
    assert_eq!(
        t.app.get("/api/health").await.1["checks"]["rpc"]["ok"],
        true
    );
}

#[actix_rt::test]
async fn a_429_is_retried_after_its_retry_after() {
    let (t, proxy) = behind_proxy(5000, 1000).await;
    let (pool, _) = t.create_and_register(6, Some(100_000_000), Some(-8)).await;
    proxy.clear();
    proxy.set(Fault::RateLimited {
        retry_after: 1,
        times: 2,
    });
    let started = Instant::now();
    let res = t.sync_pool(&pool).await;
    assert_eq!(res.0, 200, "{res:?}");
    // Two 429s, each honoured for its 1 s, then the real answer.
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "waited {:?}",
        started.elapsed()
    );
    let hits = proxy.hits();
    assert_eq!(hits.len(), 3);
    assert!(hits[1].0 - hits[0].0 >= Duration::from_millis(950));
    assert!(hits[2].0 - hits[1].0 >= Duration::from_millis(950));
}

#[actix_rt::test]
async fn rate_limit_holds_at_the_chain_and_duplicate_reads_coalesce() {
    let max_rps = 25;
    let (t, proxy) = behind_proxy(20_000, max_rps).await;
    let (pool, _) = t.create_and_register(6, Some(100_000_000), Some(-8)).await;
    let same_user = Wallet::new().pubkey();
    t.put_position(&pool, &key(&same_user), 10, 0).await;
    proxy.clear();

    // 500 concurrent syncs: 400 of one position (identical reads) and 100 distinct.
    let mut bodies = Vec::new();
    for i in 0..500 {
        let user = if i % 5 == 0 {
            Pubkey::new_unique().to_string()
        } else {
            same_user.clone()
        };
        bodies.push(json!({ "pool_address": pool.to_string(), "user": user }));
    }
    let started = Instant::now();
    let results =
        futures_util::future::join_all(bodies.iter().map(|b| t.app.post("/api/positions/sync", b)))
            .await;
    let took = started.elapsed();
    assert!(
        results.iter().all(|(s, _)| *s == 200),
        "{:?}",
        results.iter().find(|(s, _)| *s != 200)
    );

    let hits: Vec<Instant> = proxy.hits().into_iter().map(|(at, _)| at).collect();
    // Distinct reads cannot coalesce (100 of them); the 400 identical ones collapse
    // into far fewer calls than requests.
    assert!(hits.len() >= 100, "{} chain requests", hits.len());
    assert!(
        hits.len() < 250,
        "identical reads were not coalesced: {} chain requests for 500 syncs",
        hits.len()
    );
    // The limiter holds over the run: from the first request to the last, no more
    // than max_rps per second (one request of slack for the edges).
    let span = hits[hits.len() - 1] - hits[0];
    let allowed = (span.as_secs_f64() * f64::from(max_rps) * 1.02).floor() as usize + 1;
    assert!(
        hits.len() <= allowed,
        "{} requests in {span:?}: above {max_rps}/s",
        hits.len()
    );
    // And it spreads them evenly: any 1-second window holds at most max_rps (+1
    // for the window edge), give or take 150 ms of scheduling. The proxy stamps
    // arrivals after the OS has run it, and with the suite running tests in
    // parallel on two cores arrivals can bunch by that much.
    let mut worst = 0;
    for (i, start) in hits.iter().enumerate() {
        let in_window = hits[i..]
            .iter()
            .take_while(|t| **t < *start + Duration::from_secs(1))
            .count();
        worst = worst.max(in_window);
    }
    let jitter = (f64::from(max_rps) * 0.15).ceil() as usize;
    assert!(
        worst <= max_rps as usize + 1 + jitter,
        "{worst} requests in one second, limit {max_rps} (+{jitter} for scheduling)"
    );
    println!(
        "500 syncs: {} chain requests in {took:?}, busiest second {worst} (limit {max_rps})",
        hits.len()
    );
}

/// A burst above the rate (the probe: 205 concurrent syncs of distinct
/// positions from 8 clients at the default 40 requests/s) is served in arrival
/// order: every one answers 200 (2 to 4 used to wait out the 5 s timeout and
/// get 502), and the slowest within the queue's length / rate + 1 s.
#[actix_rt::test]
async fn a_burst_above_the_rate_is_served_in_arrival_order() {
    let (t, proxy) = behind_proxy(5_000, 40).await;
    let (pool, _) = t.create_and_register(6, Some(100_000_000), Some(-8)).await;
    proxy.clear();
    let clients: Vec<reqwest::Client> = (0..8).map(|_| reqwest::Client::new()).collect();
    let url = t.app.url("/api/positions/sync");
    let started = Instant::now();
    let syncs = (0..205).map(|i| {
        let body =
            json!({ "pool_address": pool.to_string(), "user": Pubkey::new_unique().to_string() });
        let (client, url) = (clients[i % 8].clone(), url.clone());
        async move {
            let status = client
                .post(url)
                .json(&body)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16();
            (status, started.elapsed())
        }
    });
    let results = futures_util::future::join_all(syncs).await;
    let failed: Vec<_> = results.iter().filter(|(s, _)| *s != 200).collect();
    assert!(failed.is_empty(), "{} not 200: {failed:?}", failed.len());
    let hits = proxy.hits();
    let requests = hits.len();
    // From the first request the chain saw (what the client spent spawning 205
    // requests is not the gate's), to the last answer.
    let first = hits.iter().map(|(at, _)| *at).min().unwrap();
    let last_answer = started + results.iter().map(|(_, took)| *took).max().unwrap();
    let slowest = last_answer.duration_since(first);
    let bound = Duration::from_secs_f64(requests as f64 / 40.0 + 1.0);
    assert!(
        slowest <= bound,
        "slowest {slowest:?} for {requests} chain requests at 40/s (bound {bound:?})"
    );
    println!("burst: 205 syncs, {requests} chain requests, slowest {slowest:?}, bound {bound:?}");
}
