//! Faults at the chain edge, each against surfpool through the tests' TCP proxy
//! (`ws_proxy`) where a fault must be injected: the websocket down for 10 s,
//! the chain's node unreachable and back, notifications duplicated and
//! reordered, PostgreSQL gone and back while the stream is live, and the
//! leader's lease session killed. After each, the index equals the chain.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use lendex::domain::accounts::*;
use lendex::domain::pubkey::Pubkey;
use serde_json::{Value, json};

use crate::chain_support::*;
use crate::common::*;
use crate::fixtures::market::USD;
use lendex_testkit::proxy::TcpProxy;

/// What the test put on the chain: each pool's account, each owner's positions.
struct Book {
    pools: Vec<(Pubkey, LendingPool)>,
    /// owner -> position address -> (pool, deposit shares, borrow principal)
    owners: BTreeMap<Pubkey, BTreeMap<Pubkey, (Pubkey, u64, u64)>>,
}

impl Book {
    /// Two registered pools (USDC-like at $1, SOL-like at $20) and `n` owners,
    /// each with a deposit in the first and a debt in the second.
    async fn market(t: &ChainApp, n: usize) -> Book {
        let mut book = Book {
            pools: vec![
                t.create_and_register(6, Some(USD), Some(-8)).await,
                t.create_and_register(9, Some(20 * USD), Some(-8)).await,
            ],
            owners: BTreeMap::new(),
        };
        for i in 0..n as u64 {
            let owner = Pubkey::new_unique();
            book.put(t, 0, &owner, 1_000_000 + i, 0).await;
            book.put(t, 1, &owner, 0, 10_000_000 + i).await;
        }
        book
    }

    async fn put(&mut self, t: &ChainApp, pool: usize, owner: &Pubkey, deposit: u64, borrow: u64) {
        let pool = self.pools[pool].0;
        let address = t.put_position(&pool, owner, deposit, borrow).await;
        self.owners
            .entry(*owner)
            .or_default()
            .insert(address, (pool, deposit, borrow));
    }

    /// Closes an owner's first position on chain.
    async fn close_one(&mut self, t: &ChainApp, owner: &Pubkey) {
        let positions = self.owners.get_mut(owner).unwrap();
        let address = *positions.keys().next().unwrap();
        positions.remove(&address);
        t.chain.remove(&address).await;
    }

    async fn reprice(&mut self, t: &ChainApp, pool: usize, price: i64) {
        let (address, data) = &mut self.pools[pool];
        data.oracle_price = Some(price);
        t.chain.set(address, &t.program, &encode_pool(data)).await;
    }

    /// Where the index (as the API serves it) differs from the chain, if anywhere.
    async fn differs(&self, app: &TestApp) -> Option<String> {
        let (_, pools) = app.get("/api/pools").await;
        for (address, data) in &self.pools {
            let served = pools["pools"]
                .as_array()?
                .iter()
                .find(|p| p["pool_address"] == address.to_string())?;
            let expected = json!(data.oracle_price.map(|p| p.to_string()));
            if served["oracle_price"] != expected {
                return Some(format!(
                    "pool {address}: {} for {expected}",
                    served["oracle_price"]
                ));
            }
        }
        for (owner, positions) in &self.owners {
            let (_, body) = app.get(&format!("/api/positions/{owner}")).await;
            let served: BTreeMap<String, (String, String, String)> = body["positions"]
                .as_array()?
                .iter()
                .map(|p| {
                    let text = |k: &str| p[k].as_str().unwrap_or_default().to_string();
                    (
                        text("position_address"),
                        (
                            text("pool_address"),
                            text("deposit_shares"),
                            text("borrow_principal"),
                        ),
                    )
                })
                .collect();
            let expected: BTreeMap<String, (String, String, String)> = positions
                .iter()
                .map(|(a, (pool, d, b))| {
                    (
                        a.to_string(),
                        (pool.to_string(), d.to_string(), b.to_string()),
                    )
                })
                .collect();
            if served != expected {
                return Some(format!("owner {owner}: {served:?} for {expected:?}"));
            }
        }
        None
    }

    /// Waits up to `limit` for the index to equal the chain.
    async fn caught_up(&self, app: &TestApp, limit: Duration) -> Result<Duration, String> {
        let started = Instant::now();
        loop {
            match self.differs(app).await {
                None => return Ok(started.elapsed()),
                Some(diff) if started.elapsed() > limit => return Err(diff),
                Some(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    /// Some of everything changes on chain: prices, amounts, a new owner, and
    /// (with `closing`) a position closed.
    async fn move_on(&mut self, t: &ChainApp, round: u64, closing: bool) {
        self.reprice(t, 1, (20 + round as i64 % 7) * USD).await;
        let owners: Vec<Pubkey> = self.owners.keys().copied().collect();
        let owner = owners[round as usize % owners.len()];
        self.put(t, 0, &owner, 2_000_000 + round, 0).await;
        self.put(t, 1, &Pubkey::new_unique(), 0, 5_000_000 + round)
            .await;
        if closing && round % 3 == 2 {
            let owner = owners[(round as usize + 1) % owners.len()];
            if self.owners[&owner].len() > 1 {
                self.close_one(t, &owner).await;
            }
        }
    }
}

async fn sync_check(app: &TestApp) -> Value {
    app.get("/api/health").await.1["checks"]["sync"].clone()
}

async fn stream_up(app: &TestApp) -> bool {
    eventually(Duration::from_secs(15), async || {
        sync_check(app).await["stream"]["connected"] == true
    })
    .await
}

/// Every row's slot, to show none went back.
async fn slots(db: &tokio_postgres::Client) -> BTreeMap<String, i64> {
    pairs(
        db,
        "SELECT pool_address AS k, slot FROM pools UNION ALL SELECT position_address, slot FROM positions",
    )
    .await
    .into_iter()
    .collect()
}

fn none_went_back(before: &BTreeMap<String, i64>, after: &BTreeMap<String, i64>) {
    for (key, slot) in after {
        if let Some(earlier) = before.get(key) {
            assert!(slot >= earlier, "{key}: slot {slot} after {earlier}");
        }
    }
}

/// (a) The websocket drops for 10 s while prices and positions change on chain.
/// After the reconnect the index equals the chain within
/// `sync.interval_seconds` + 2 s, health counts the reconnect, and no row went
/// back to an older read.
#[actix_rt::test]
async fn a_websocket_down_for_10_s_is_caught_up_within_the_interval() {
    let chain = LocalChain::start().await;
    let ws = TcpProxy::start(&chain.ws_url).await;
    let (rpc, ws_url) = (chain.url.clone(), ws.url.clone());
    let interval = 3;
    let t = ChainApp::start_on(chain, &rpc, |c| {
        c.sync.interval_seconds = interval;
        c.rpc.ws_url = ws_url;
        c.rpc.ws_silence_ms = 1_500;
    })
    .await;
    let mut book = Book::market(&t, 6).await;
    let app = &t.app;
    book.caught_up(app, Duration::from_secs(15)).await.unwrap();
    assert!(stream_up(app).await);
    let db = app.db.connect().await;
    let before = slots(&db).await;

    ws.down();
    for round in 0..10 {
        book.move_on(&t, round, true).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    ws.up();
    let took = book
        .caught_up(app, Duration::from_secs(interval + 2))
        .await
        .unwrap_or_else(|diff| panic!("not caught up within the interval + 2 s: {diff}"));
    println!("caught up {took:?} after the websocket came back");
    assert!(
        eventually(Duration::from_secs(10), async || {
            let s = sync_check(app).await["stream"].clone();
            s["connected"] == true && s["reconnects"].as_u64().unwrap() >= 1
        })
        .await,
        "health did not count the reconnect: {}",
        sync_check(app).await
    );
    none_went_back(&before, &slots(&db).await);
}

/// (b) The chain's node goes away (its HTTP and websocket ports refuse
/// connections, as when its process is killed) while the chain moves on, then
/// comes back with its ledger. Meanwhile reads are answered from memory and
/// health says the RPC is degraded; afterwards the index catches up on its own.
/// (surfpool keeps its ledger in memory only, so killing it would make a new
/// chain rather than restart this one: the proxy plays the dead process.)
#[actix_rt::test]
async fn a_node_that_goes_away_and_comes_back_is_caught_up() {
    let chain = LocalChain::start().await;
    let (http, ws) = (
        TcpProxy::start(&chain.url).await,
        TcpProxy::start(&chain.ws_url).await,
    );
    let (rpc, ws_url) = (http.url.clone(), ws.url.clone());
    let interval = 2;
    let t = ChainApp::start_on(chain, &rpc, |c| {
        c.sync.interval_seconds = interval;
        c.rpc.ws_url = ws_url;
        c.rpc.ws_silence_ms = 1_500;
        c.rpc.timeout_ms = 1_000;
    })
    .await;
    // The fixtures write to the chain directly, not through the proxies.
    let mut book = Book::market(&t, 4).await;
    let app = &t.app;
    book.caught_up(app, Duration::from_secs(15)).await.unwrap();
    let owner = *book.owners.keys().next().unwrap();

    http.down();
    ws.down();
    for round in 0..4 {
        book.move_on(&t, round, true).await;
    }
    assert!(
        eventually(Duration::from_secs(5), async || {
            let (_, health) = app.get("/api/health").await;
            health["status"] == "degraded" && health["checks"]["rpc"]["ok"] == false
        })
        .await,
        "health did not say the RPC is down"
    );
    let (status, held) = app.get(&format!("/api/positions/{owner}")).await;
    assert_eq!(status, 200, "reads answer from memory: {held}");
    assert_eq!(app.get("/api/liquidations").await.0, 200);
    assert_eq!(app.get("/api/positions/unhealthy").await.0, 200);
    tokio::time::sleep(Duration::from_secs(2)).await;

    http.up();
    ws.up();
    book.caught_up(app, Duration::from_secs(interval + 8))
        .await
        .unwrap_or_else(|diff| panic!("not caught up after the node came back: {diff}"));
    assert!(
        eventually(Duration::from_secs(5), async || {
            app.get("/api/health").await.1["checks"]["rpc"]["ok"] == true
        })
        .await
    );
}

/// (c) The websocket delivers every notification twice, and each after the
/// one that follows it. With no reconciliation in between (the interval is a
/// minute), the index still ends equal to the chain.
#[actix_rt::test]
async fn duplicated_and_reordered_notifications_leave_the_index_equal_to_the_chain() {
    let chain = LocalChain::start().await;
    let ws = TcpProxy::start(&chain.ws_url).await;
    ws.mess();
    let (rpc, ws_url) = (chain.url.clone(), ws.url.clone());
    let t = ChainApp::start_on(chain, &rpc, |c| {
        c.sync.interval_seconds = 60;
        c.rpc.ws_url = ws_url;
    })
    .await;
    let mut book = Book::market(&t, 4).await;
    let app = &t.app;
    book.caught_up(app, Duration::from_secs(15)).await.unwrap();
    assert!(stream_up(app).await);
    // Let the connection's first reconcile end: from here only notifications.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = slots(&app.db.connect().await).await;
    for round in 0..6 {
        // Closed positions get no notification (the reconcile removes them).
        book.move_on(&t, round, false).await;
        book.reprice(&t, 0, USD + round as i64).await;
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    book.caught_up(app, Duration::from_secs(10))
        .await
        .unwrap_or_else(|diff| panic!("the stream left the index behind: {diff}"));
    let messed = ws.messed.load(std::sync::atomic::Ordering::Relaxed);
    assert!(messed >= 4, "only {messed} notifications were reordered");
    // IndexSnapshot the stream could tell has arrived, and nothing went back.
    none_went_back(&before, &slots(&app.db.connect().await).await);
}

/// (d) PostgreSQL goes away (every connection dropped, new ones refused, as in
/// a restart) while the stream is live and the chain moves on. Writes in the
/// meantime answer 503, never 2xx; afterwards the writer recovers, the lease is
/// taken again, its reconcile covers the gap, and every write acknowledged
/// with a 2xx is in the database.
#[actix_rt::test]
async fn a_database_restart_loses_no_change_and_no_acknowledged_write() {
    let pg = TcpProxy::start("127.0.0.1:5432").await;
    let chain = LocalChain::start().await;
    let rpc = chain.url.clone();
    let proxied = pg.url.clone();
    let interval = 2;
    let t = ChainApp::start_on(chain, &rpc, |c| {
        through_proxy(c, &proxied);
        c.sync.interval_seconds = interval;
    })
    .await;
    let mut book = Book::market(&t, 4).await;
    let app = &t.app;
    book.caught_up(app, Duration::from_secs(15)).await.unwrap();
    assert!(stream_up(app).await);

    let mut acknowledged = Vec::new();
    let mut record = async |n: u32| {
        let signature = format!("restart-{n}");
        let (status, _) = app
            .post(
                "/api/transactions",
                &json!({ "signature": signature, "wallet": Pubkey::new_unique().to_string(),
                         "action": "deposit", "amount": "1" }),
            )
            .await;
        assert!(status == 200 || status == 503, "a write answered {status}");
        if status == 200 {
            acknowledged.push(signature);
        }
    };
    record(0).await;
    pg.down();
    for round in 0..4 {
        book.move_on(&t, round, true).await;
        record(round as u32 + 1).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    pg.up();
    book.caught_up(app, Duration::from_secs(20))
        .await
        .unwrap_or_else(|diff| {
            panic!("a change made while the database was away was lost: {diff}")
        });
    for n in 10..15 {
        record(n).await;
    }
    assert!(
        eventually(Duration::from_secs(10), async || {
            app.get("/api/health").await.1["status"] == "ok"
        })
        .await,
        "{}",
        app.get("/api/health").await.1
    );
    // Checked directly, not through the proxy.
    let db = app.db.connect().await;
    for signature in &acknowledged {
        let row = db
            .query_opt("SELECT 1 FROM tx_log WHERE signature = $1", &[signature])
            .await
            .unwrap();
        assert!(
            row.is_some(),
            "{signature} was acknowledged but is not stored"
        );
    }
    assert!(
        acknowledged.len() >= 6,
        "the writer recovered: {acknowledged:?}"
    );
}

/// (e) The leader's lease session is killed (pg_terminate_backend) while its
/// process lives: it stops ingesting within 1 s (never two ingesters), takes
/// the lease again, and its reconcile covers what changed meanwhile.
#[actix_rt::test]
async fn a_killed_lease_session_stops_ingestion_at_once_and_is_caught_up() {
    let t = ChainApp::start_with(|c| c.sync.interval_seconds = 30).await;
    let mut book = Book::market(&t, 4).await;
    let app = &t.app;
    book.caught_up(app, Duration::from_secs(15)).await.unwrap();
    assert!(stream_up(app).await);
    assert_eq!(sync_check(app).await["role"], "leader");

    let db = app.db.connect().await;
    let killed = db
        .query_one(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND application_name = 'lendex-lease') t",
            &[],
        )
        .await
        .unwrap()
        .get::<_, i64>(0);
    assert_eq!(killed, 1, "one lease session");
    let started = Instant::now();
    let mut stepped_down = None;
    while started.elapsed() < Duration::from_secs(3) {
        let sync = sync_check(app).await;
        if sync["role"] == "follower" && sync["stream"]["connected"] == false {
            stepped_down = Some(started.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = stepped_down.expect("the leader kept ingesting without its lease");
    assert!(took < Duration::from_secs(1), "stepped down after {took:?}");

    // While it is not the leader, the chain moves on.
    for round in 0..3 {
        book.move_on(&t, round, true).await;
    }
    assert!(
        eventually(
            Duration::from_secs(10),
            async || sync_check(app).await["role"] == "leader"
        )
        .await,
        "the lease was not taken again"
    );
    book.caught_up(app, Duration::from_secs(15))
        .await
        .unwrap_or_else(|diff| panic!("the gap was not reconciled: {diff}"));
}
