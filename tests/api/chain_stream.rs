//! The live chain: with the poll at 60 s, changes made on the chain
//! reach the index through the RPC websocket alone.

use std::time::{Duration, Instant};

use lendex::domain::accounts::*;
use lendex::domain::pubkey::Pubkey;
use serde_json::Value;

use crate::common::*;
use crate::fixtures::market::{USD, market};

/// Whether GET /api/positions/{owner} lists `n` positions within `secs`.
async fn positions_arrive(app: &TestApp, owner: &Pubkey, n: usize, secs: u64) -> bool {
    let path = format!("/api/positions/{owner}");
    eventually(Duration::from_secs(secs), async || {
        app.get(&path).await.1["positions"]
            .as_array()
            .is_some_and(|p| p.len() == n)
    })
    .await
}

async fn stream_check(app: &TestApp) -> Value {
    app.get("/api/health").await.1["checks"]["sync"].clone()
}

/// Whether health says the live stream is connected (`up`) within `secs`.
async fn stream_is(app: &TestApp, up: bool, secs: u64) -> bool {
    eventually(Duration::from_secs(secs), async || {
        stream_check(app).await["stream"]["connected"] == up
    })
    .await
}

#[actix_rt::test]
async fn chain_changes_arrive_by_websocket_with_no_api_call() {
    // Pings every 0.5 s: they must not disturb the notifications.
    let mut m = market(|c| {
        c.sync.interval_seconds = 60;
        c.rpc.ws_silence_ms = 1500;
    })
    .await;
    let app = &m.t.app;
    assert!(
        eventually(Duration::from_secs(15), async || {
            let sync = stream_check(app).await;
            sync["role"] == "leader" && sync["stream"]["connected"] == true
        })
        .await,
        "{}",
        stream_check(app).await
    );

    // A new position, written on chain only: 500 USDC against 40 SOL at $20.
    let owner = Pubkey::new_unique();
    m.t.put_position(&m.usdc, &owner, 500_000_000, 0).await;
    m.t.put_position(&m.sol, &owner, 0, 40_000_000_000).await;
    let started = Instant::now();
    let path = format!("/api/positions/{owner}");
    assert!(
        positions_arrive(app, &owner, 2, 10).await,
        "the positions never arrived: {}",
        app.get(&path).await.1
    );
    let took = started.elapsed();
    let unhealthy = app.get("/api/positions/unhealthy").await.1;
    assert!(
        unhealthy.to_string().contains(&owner.to_string()),
        "{unhealthy}"
    );

    // A price move on chain only: the owner's health factor follows.
    let before = app.get(&path).await.1["positions"][0]["health_factor_wad"].clone();
    m.sol_data.oracle_price = Some(10 * USD);
    m.t.chain
        .set(&m.sol, &m.t.program, &encode_pool(&m.sol_data))
        .await;
    let app = &m.t.app;
    assert!(
        eventually(Duration::from_secs(10), async || {
            app.get(&path).await.1["positions"][0]["health_factor_wad"] != before
        })
        .await,
        "the price move never arrived: db {:?}, unhealthy {}",
        app.db
            .connect()
            .await
            .query("SELECT pool_address, oracle_price, slot FROM pools", &[])
            .await
            .unwrap()
            .iter()
            .map(|r| (
                r.get::<_, String>(0),
                r.get::<_, Option<i64>>(1),
                r.get::<_, i64>(2)
            ))
            .collect::<Vec<_>>(),
        app.get(&path).await.1
    );
    let sync = stream_check(app).await;
    assert!(sync["stream"]["lastNotificationAt"].is_string(), "{sync}");
    println!("position by websocket after {took:?}");
}

/// A cut connection is noticed and reconnected, and what changed while it was
/// down arrives with the reconcile after it; a frozen one (no close) is noticed
/// by the silence timeout.
#[actix_rt::test]
async fn a_cut_or_frozen_websocket_is_reconnected_and_reconciled() {
    use crate::chain_support::{ChainApp, LocalChain};
    use lendex_testkit::proxy::TcpProxy;
    let chain = LocalChain::start().await;
    let proxy = TcpProxy::start(&chain.ws_url).await;
    let (rpc, ws) = (chain.url.clone(), proxy.url.clone());
    let t = ChainApp::start_on(chain, &rpc, |c| {
        c.sync.interval_seconds = 60;
        c.rpc.ws_url = ws;
        c.rpc.ws_silence_ms = 1_500;
    })
    .await;
    let (usdc, _) = t.create_and_register(6, Some(USD), Some(-8)).await;
    let app = &t.app;
    let stream = async || stream_check(app).await["stream"].clone();
    assert!(stream_is(app, true, 15).await);

    // Down: the cut is noticed; a position written meanwhile arrives after the
    // reconnect's reconcile (no notification will ever name it).
    proxy.down();
    assert!(stream_is(app, false, 5).await, "the cut went unnoticed");
    let owner = Pubkey::new_unique();
    t.put_position(&usdc, &owner, 7_000_000, 0).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    proxy.up();
    assert!(
        positions_arrive(app, &owner, 1, 15).await,
        "the change made while down never arrived: {}",
        stream().await
    );
    assert!(
        eventually(Duration::from_secs(5), async || {
            let s = stream().await;
            s["connected"] == true && s["reconnects"].as_u64().unwrap() >= 1
        })
        .await,
        "not reconnected: {}",
        stream().await
    );
    let after_cut = stream().await;

    // Frozen: nothing closes, nothing flows; the silence timeout reconnects.
    proxy.freeze();
    let before = after_cut["reconnects"].as_u64().unwrap();
    assert!(
        eventually(Duration::from_secs(10), async || {
            let s = stream().await;
            s["connected"] == true && s["reconnects"].as_u64().unwrap() > before
        })
        .await,
        "a frozen socket went unnoticed: {}",
        stream().await
    );
    let second = Pubkey::new_unique();
    t.put_position(&usdc, &second, 9_000_000, 0).await;
    assert!(
        positions_arrive(app, &second, 1, 10).await,
        "nothing arrives after the frozen socket was replaced"
    );
}

/// A source back from a cut while a reconcile is stuck in its scans (here:
/// never answered; at 100,000 positions: half a minute of them) has the
/// pools read again at once: a price moved during the cut is indexed
/// without waiting for the reconcile that runs, nor the one after it.
#[actix_rt::test]
async fn a_reconnect_during_a_long_reconcile_reads_the_pools_at_once() {
    use crate::chain_support::{ChainApp, Fault, LocalChain, RpcProxy};
    use lendex_testkit::proxy::TcpProxy;
    let chain = LocalChain::start().await;
    let ws = TcpProxy::start(&chain.ws_url).await;
    let rpc = RpcProxy::start(&chain.url).await;
    let ws_url = ws.url.clone();
    let t = ChainApp::start_on(chain, &rpc.url, |c| {
        c.sync.interval_seconds = 3600;
        c.rpc.ws_url = ws_url;
        // A scan's deadline is four of these: the stuck reconcile outlasts the test.
        c.rpc.timeout_ms = 30_000;
    })
    .await;
    let app = &t.app;
    assert!(stream_is(app, true, 15).await);
    // Scans never answer from now on: the reconcile that registering a
    // pool starts sticks in the pool's scan (the first scan of the test).
    rpc.set(Fault::HangScans);
    let (pool, mut data) = t.create_and_register(6, Some(USD), Some(-8)).await;
    assert!(
        eventually(Duration::from_secs(10), async || rpc
            .hits()
            .iter()
            .any(|(_, body)| body.contains("getProgramAccounts")))
        .await,
        "no reconcile started"
    );

    // Cut while the price moves; back, the stream asks for a reconcile.
    ws.down();
    assert!(stream_is(app, false, 5).await, "the cut went unnoticed");
    let set_at = t.chain.slot().await;
    data.oracle_price = Some(3 * USD);
    t.chain.set(&pool, &t.program, &encode_pool(&data)).await;
    // surfpool changes an account without a slot of its own: a read in the
    // slot of an earlier one would not be newer (on a cluster the change
    // comes in a later slot).
    assert!(
        eventually(Duration::from_secs(5), async || t.chain.slot().await
            > set_at)
        .await,
        "the chain's slot does not move"
    );
    ws.up();
    let back = Instant::now();
    let want = (3 * USD).to_string();
    let indexed = async || {
        let status = app.get("/api/pools/status").await.1;
        status["pools"].as_array().is_some_and(|pools| {
            pools.iter().any(|p| {
                p["pool_address"] == pool.to_string() && p["oracle_price"] == want.as_str()
            })
        })
    };
    // The reconnect's own wait included (the old way: the stuck scans' 120 s).
    assert!(
        eventually(Duration::from_secs(15), indexed).await,
        "the price moved during the cut waited for the stuck reconcile: {}",
        stream_check(app).await["stream"]
    );
    println!(
        "price indexed {:?} after the source came back",
        back.elapsed()
    );
    rpc.set(Fault::Forward);
}

/// A notification never regresses a row read at a newer slot: the pool row
/// says it was read at a far later slot, so what a notification brings (its
/// re-read, at the chain's current slot) is not written over it.
#[actix_rt::test]
async fn a_notification_never_overwrites_a_newer_read() {
    let mut m = market(|c| c.sync.interval_seconds = 60).await;
    let app = &m.t.app;
    assert!(
        eventually(Duration::from_secs(15), async || {
            stream_check(app).await["stream"]["connected"] == true
        })
        .await
    );
    let db = app.db.connect().await;
    let newer_slot: i64 = 1_000_000_000;
    db.execute(
        "UPDATE pools SET slot = $1, oracle_price = 777 WHERE pool_address = $2",
        &[&newer_slot, &m.sol.to_string()],
    )
    .await
    .unwrap();
    // Both pools change on chain; the usdc one (no newer read) is the witness
    // that the notifications were applied.
    m.sol_data.oracle_price = Some(11 * USD);
    m.t.chain
        .set(&m.sol, &m.t.program, &encode_pool(&m.sol_data))
        .await;
    m.usdc_data.oracle_price = Some(2 * USD);
    m.t.chain
        .set(&m.usdc, &m.t.program, &encode_pool(&m.usdc_data))
        .await;
    let price = async |pool: &Pubkey| -> Option<i64> {
        db.query_one(
            "SELECT oracle_price FROM pools WHERE pool_address = $1",
            &[&pool.to_string()],
        )
        .await
        .unwrap()
        .get(0)
    };
    assert!(
        eventually(Duration::from_secs(10), async || price(&m.usdc).await
            == Some(2 * USD))
        .await,
        "the witness notification was not applied"
    );
    assert_eq!(
        price(&m.sol).await,
        Some(777),
        "the newer read was regressed"
    );
}

/// A position account allocated larger than the layout (a realloc by a program
/// upgrade) is still indexed: the reconciliation's scan has no dataSize filter.
#[actix_rt::test]
async fn a_larger_position_account_is_still_found() {
    // No websocket: only the reconciliation's scan can find it.
    let m = market(|c| {
        c.sync.interval_seconds = 1;
        c.rpc.ws_url = "ws://127.0.0.1:9".into();
    })
    .await;
    let owner = Pubkey::new_unique();
    let (address, position) =
        crate::chain_support::position_account(&m.t.program, &m.usdc, &owner, 3_000_000, 0);
    let mut data = encode_position(&position);
    data.resize(200, 0);
    m.t.chain.set(&address, &m.t.program, &data).await;
    let app = &m.t.app;
    assert!(
        positions_arrive(app, &owner, 1, 10).await,
        "a 200-byte position account was not indexed"
    );
}

/// Two prices written in one slot apply as one change on the websocket
/// source (the demo's walk writes its pools back to back): an account that
/// the first write alone would sink and the second lifts again never goes
/// under in the feed, since at the slot's end it never was.
#[actix_rt::test]
async fn the_writes_of_one_slot_apply_as_one_change() {
    let m = market(|c| c.sync.interval_seconds = 60).await;
    let app = &m.t.app;
    assert!(
        eventually(Duration::from_secs(15), async || {
            stream_check(app).await["stream"]["connected"] == true
        })
        .await
    );
    // 1,000 USDC (x0.8) against 30 SOL: $800 against $600 at $1 and $20.
    let owner = m.account(1_000_000_000, 30_000_000_000).await;
    let hf = async || -> u128 {
        let detail = app.get(&format!("/api/positions/{owner}/detail")).await.1;
        detail["positions"][0]["health_factor_wad"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    let wad = 1_000_000_000_000_000_000u128;
    let (mut usdc, mut sol) = (m.usdc_data.clone(), m.sol_data.clone());
    let put = async |pool: &Pubkey, data: &LendingPool| {
        m.t.chain.set(pool, &m.t.program, &encode_pool(data)).await;
    };
    // Let the source hear a few slots: it holds a batch until a later one.
    tokio::time::sleep(Duration::from_secs(1)).await;
    for attempt in 0..8 {
        let mut feed = crate::fixtures::feeds::Feed::open(&m, None).await;
        // Write early in a slot (400 ms here) but clear of its start, where
        // the node's slot and account notifications race (docs/design.md §14): a
        // busy machine then still lands both writes in it.
        let mut before = m.t.chain.slot().await;
        let began = before;
        while before == began {
            tokio::time::sleep(Duration::from_millis(10)).await;
            before = m.t.chain.slot().await;
        }
        tokio::time::sleep(Duration::from_millis(80)).await;
        // SOL to $30 alone: $900 of debt against $800, under water...
        sol.oracle_price = Some(30 * USD);
        put(&m.sol, &sol).await;
        tokio::time::sleep(Duration::from_millis(60)).await;
        // ...and USDC to $2 in the same slot: $1,600 against $900.
        usdc.oracle_price = Some(2 * USD);
        put(&m.usdc, &usdc).await;
        let after = m.t.chain.slot().await;
        assert!(
            eventually(Duration::from_secs(10), async || hf().await > wad * 3 / 2).await,
            "the index never held both prices"
        );
        if before == after {
            let frames = feed.read(20, Duration::from_secs(2)).await;
            let about: Vec<_> = frames
                .iter()
                .filter(|f| f.data["owner"] == owner.as_str())
                .collect();
            assert!(
                about.is_empty(),
                "attempt {attempt}: flipped within slot {before}: {about:?}"
            );
            return;
        }
        // The writes straddled a slot: under, then recovered, is the truth
        // there. Put both back (SOL first: never under) and try again.
        sol.oracle_price = Some(20 * USD);
        put(&m.sol, &sol).await;
        usdc.oracle_price = Some(USD);
        put(&m.usdc, &usdc).await;
        assert!(eventually(Duration::from_secs(10), async || hf().await < wad * 7 / 5).await);
    }
    panic!("no two writes landed in one slot in eight attempts");
}
