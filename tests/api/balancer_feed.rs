//! The liquidation feed through HAProxy (docs/design.md §13): subscribers follow
//! the feed with their `Last-Event-ID`, as the examples do, while replicas die
//! or are restarted under them, and every price move reaches every subscriber
//! exactly once, with no snapshot after the first.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::balancer::{balanced, replica};
use crate::common::*;

/// Owners under water, each re-scored by every price move.
pub(crate) const OWNERS: usize = 20;

/// Bits of a sequence that number events within one tick (`feed::replay`).
const TICK_BITS: u32 = 24;
const SNAPSHOT_IDX: u64 = (1 << TICK_BITS) - 1;

/// `OWNERS` owners under water, written by SQL: 1,000 tokens deposited in
/// the collateral pool ($1, threshold 0.8) against 900 borrowed ($1): 0.89.
/// Returns the collateral pool.
pub(crate) async fn seed(db: &tokio_postgres::Client) -> String {
    let collateral = insert_pool(db, ORACLE_DOLLAR).await;
    let debt = insert_pool(db, ORACLE_DOLLAR).await;
    let key = || lendex::domain::pubkey::Pubkey::new_unique().to_string();
    let owners: Vec<String> = (0..OWNERS).map(|_| key()).collect();
    for (pool, shares, principal) in [
        (&collateral, 1_000_000_000i64, 0i64),
        (&debt, 0, 900_000_000),
    ] {
        let positions: Vec<String> = (0..OWNERS).map(|_| key()).collect();
        db.execute(
            "INSERT INTO positions (cluster, position_address, pool_address, owner, deposit_shares,
                 borrow_principal, deposit_idx_snap, borrow_idx_snap)
             SELECT 'localnet', p, $1, o, $4::bigint, $5::bigint, 1000000000000000000, 1000000000000000000
             FROM unnest($2::text[], $3::text[]) AS t(p, o)",
            &[pool, &positions, &owners, &shares, &principal],
        )
        .await
        .unwrap();
    }
    collateral
}

/// Moves the collateral's price every `every` until `done` (each move is one
/// tick that re-scores every owner); returns each move's tick.
pub(crate) fn mover(
    url: String,
    pool: String,
    every: Duration,
    done: Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<Vec<u64>> {
    // On a thread and runtime of its own: the test's runtime also parses a
    // hundred subscribers' streams, and a mover waiting its turn there moved
    // a fraction of its prices on a loaded machine.
    tokio::task::spawn_blocking(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(move_prices(url, pool, every, done))
    })
}

async fn move_prices(
    url: String,
    pool: String,
    every: Duration,
    done: Arc<std::sync::atomic::AtomicBool>,
) -> Vec<u64> {
    {
        let (mut db, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let mut ticks = Vec::new();
        let mut i = 0i64;
        while !done.load(std::sync::atomic::Ordering::Relaxed) {
            i += 1;
            let price = ORACLE_DOLLAR + (i % 50 + 1) * 10_000;
            let tx = db.transaction().await.unwrap();
            tx.execute(
                "UPDATE pools SET oracle_price = $1 WHERE pool_address = $2",
                &[&price, &pool],
            )
            .await
            .unwrap();
            let tick: i64 = tx
                .query_one("SELECT lendex_feed_tick()", &[])
                .await
                .unwrap()
                .get(0);
            tx.commit().await.unwrap();
            ticks.push(tick as u64);
            tokio::time::sleep(every).await;
        }
        ticks
    }
}

/// What one subscriber saw.
#[derive(Debug, Default)]
pub(crate) struct Followed {
    /// Live events: (tick, place in the tick, when received).
    pub events: Vec<(u64, u64, Instant)>,
    /// The tick of the first snapshot.
    pub first_snapshot: Option<u64>,
    pub snapshots: usize,
    pub resets: usize,
    pub connects: u64,
    /// Connection attempts refused or failed (and tried again).
    pub refused: u64,
}

impl Followed {
    /// Every tick of `ticks` after the first snapshot, each with exactly
    /// `OWNERS` events, each once; and nothing else.
    pub fn check(&self, ticks: &[u64]) -> Result<(), String> {
        let from = self.first_snapshot.ok_or("no snapshot")?;
        let mut seen: Vec<(u64, u64)> = self.events.iter().map(|(t, i, _)| (*t, *i)).collect();
        let expected: Vec<(u64, u64)> = ticks
            .iter()
            .filter(|t| **t > from)
            .flat_map(|t| (0..OWNERS as u64).map(move |i| (*t, i)))
            .collect();
        if seen != expected {
            seen.sort();
            let missing = expected.iter().filter(|e| !seen.contains(e)).count();
            let twice = seen.windows(2).filter(|w| w[0] == w[1]).count();
            return Err(format!(
                "{} events, {} expected: {missing} missing, {twice} twice",
                seen.len(),
                expected.len()
            ));
        }
        Ok(())
    }

    /// Holds every event of `ticks` after its first snapshot.
    fn holds(&self, ticks: &[u64]) -> bool {
        let from = self.first_snapshot.unwrap_or(u64::MAX);
        let wanted = ticks.iter().filter(|t| **t > from).count() * OWNERS;
        let have = self
            .events
            .iter()
            .filter(|(t, _, _)| ticks.contains(t) && *t > from)
            .count();
        have >= wanted
    }
}

/// A subscriber through `base`, the typed client's feed (which reconnects
/// with its last id by itself), until `done`.
pub(crate) fn follow(
    base: String,
    done: Arc<std::sync::atomic::AtomicBool>,
) -> (Arc<Mutex<Followed>>, tokio::task::JoinHandle<()>) {
    let followed = Arc::new(Mutex::new(Followed::default()));
    let state = followed.clone();
    let task = tokio::spawn(async move {
        let lendex = lendex_client::Client::with_http(&base, reqwest::Client::new());
        let mut feed = lendex.feed(&lendex_client::Query::new());
        // The connection whose snapshot was counted.
        let mut snapshot_of = 0;
        let stopped = async {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        };
        tokio::pin!(stopped);
        loop {
            let event = tokio::select! {
                event = feed.next() => event,
                () = &mut stopped => break,
            };
            let mut s = state.lock().unwrap();
            (s.connects, s.refused) = (feed.connects(), feed.refused());
            // Refused for good (never here: the query is empty): counted.
            let Ok(event) = event else {
                s.refused += 1;
                break;
            };
            if event.name == "reset" {
                s.resets += 1;
            }
            let Some(id) = event.id else { continue };
            let seq: u64 = id.split_once('.').unwrap().1.parse().unwrap();
            let (tick, idx) = (seq >> TICK_BITS, seq & SNAPSHOT_IDX);
            if idx == SNAPSHOT_IDX {
                if snapshot_of != feed.connects() {
                    snapshot_of = feed.connects();
                    s.snapshots += 1;
                    s.first_snapshot.get_or_insert(tick);
                }
            } else {
                s.events.push((tick, idx, Instant::now()));
            }
        }
    });
    (followed, task)
}

/// Waits until every subscriber holds every event of `ticks` (30 s at most).
pub(crate) async fn all_caught_up(followers: &[Arc<Mutex<Followed>>], ticks: &[u64]) -> bool {
    eventually(Duration::from_secs(30), async || {
        followers.iter().all(|f| f.lock().unwrap().holds(ticks))
    })
    .await
}

#[actix_rt::test]
async fn a_replica_killed_mid_move_costs_no_subscriber_an_event() {
    let db = TestDb::create().await;
    let client = db.connect().await;
    let ports = [free_port(), free_port(), free_port()];
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
