//! History under trouble (docs/design.md §12): a database outage while a point
//! waits to be stored, a leader killed before it stored what it recorded, a
//! stop with history queued, and retention dropping old days whole. In each,
//! every qualifying point and event ends up stored exactly once.

use std::process::Command;
use std::time::Duration;

use lendex::domain::wad::WAD;
use serde_json::Value;

use crate::common::*;
use crate::fixtures::history::{Book, book, events, points, served, set_price};
use crate::fixtures::locks::Held;
use crate::process::{leader_of, leading_pair, serve, wait_until_up};
use lendex_testkit::proxy::TcpProxy;

/// `points`' health factors, oldest first.
fn values(points: &[Value]) -> Vec<String> {
    points
        .iter()
        .map(|p| p["health_factor_wad"].as_str().unwrap().to_string())
        .collect()
}

/// Each value recorded once: a point never repeats the one before it.
fn assert_no_point_twice(points: &[Value]) {
    let v = values(points);
    for pair in v.windows(2) {
        assert_ne!(pair[0], pair[1], "a point recorded twice: {v:?}");
    }
}

const START: u128 = 16 * WAD / 10;
const UNDER: u128 = 96 * WAD / 100;
const DEEPER: u128 = 8 * WAD / 10; // $10: 100 x 0.8 / 100

async fn stored_values(app_db: &TestDb, owner: &str) -> Vec<String> {
    let db = app_db.connect().await;
    db.query(
        "SELECT p.health_factor_wad::text FROM history_points p
         JOIN history_owners o ON o.id = p.owner_id WHERE o.owner = $1 ORDER BY p.at",
        &[&owner],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

async fn wait_stored(db: &TestDb, owner: &str, hf: u128) -> Vec<String> {
    let want = hf.to_string();
    let mut last = Vec::new();
    let found = eventually(Duration::from_secs(20), async || {
        last = stored_values(db, owner).await;
        last.last() == Some(&want)
    })
    .await;
    assert!(found, "{want} stored: {last:?}");
    last
}

#[actix_rt::test]
async fn a_database_outage_loses_no_recorded_point_and_stores_none_twice() {
    let pg = TcpProxy::start("127.0.0.1:5432").await;
    let proxied = pg.url.clone();
    let app = spawn_app_with(|c| {
        through_proxy(c, &proxied);
        c.history.flush_interval_ms = 200;
    })
    .await;
    let db = app.db.connect().await;
    let b: Book = book(&app, &db).await;
    wait_stored(&app.db, &b.owner, START).await;

    // The move's point waits: its COPY is held, then the database goes away.
    let held = Held::table(&app.db.url, "history_points").await;
    set_price(&db, &b.sol, 12 * ORACLE_DOLLAR).await;
    assert!(
        eventually(Duration::from_secs(10), async || served(&app, &b.owner)
            .await
            == Some(UNDER.to_string()))
        .await
    );
    tokio::time::sleep(Duration::from_millis(600)).await;
    pg.down();
    // The chain moves on while the database is away (written around the proxy).
    set_price(&db, &b.sol, 10 * ORACLE_DOLLAR).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    held.release().await;
    pg.up();

    let stored = wait_stored(&app.db, &b.owner, DEEPER).await;
    assert_eq!(
        stored,
        vec![START.to_string(), UNDER.to_string(), DEEPER.to_string()],
        "every point once, in order"
    );
    let under = events(&app, &format!("owner={}", b.owner)).await;
    let kinds: Vec<&str> = under.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, vec!["under"], "{under:?}");
    // The API went on serving from memory throughout; the history too now.
    assert_no_point_twice(&points(&app, &b.owner).await);
}

#[actix_rt::test]
async fn a_killed_leaders_unstored_points_are_recorded_by_the_next_once() {
    let db = TestDb::create().await;
    let http = reqwest::Client::new();
    let env = [("LENDEX_HISTORY__FLUSH_INTERVAL_MS", "200")];
    let (mut children, ports, leader) = leading_pair(&db, &env).await;
    let client = db.connect().await;
    // The book, as in the other tests, on the leader's API.
    let probe = Remote::on(leader);
    let b = book(&probe, &client).await;
    wait_stored(&db, &b.owner, START).await;

    // Stored by the leader: the first move.
    set_price(&client, &b.sol, 12 * ORACLE_DOLLAR).await;
    wait_stored(&db, &b.owner, UNDER).await;
    // Recorded by the leader but not stored when it dies: the second move.
    let held = Held::table(&db.url, "history_points").await;
    set_price(&client, &b.sol, 10 * ORACLE_DOLLAR).await;
    let follower = *ports.iter().find(|p| **p != leader).unwrap();
    let on_follower = Remote::on(follower);
    for app in [&probe, &on_follower] {
        let app: &Remote = app;
        assert!(
            eventually(Duration::from_secs(10), async || served(app, &b.owner)
                .await
                == Some(DEEPER.to_string()))
            .await,
            "both replicas apply the move"
        );
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let index = ports.iter().position(|p| *p == leader).unwrap();
    children[index].kill().unwrap();
    let _ = children[index].wait();
    held.release().await;

    let stored = wait_stored(&db, &b.owner, DEEPER).await;
    assert_eq!(
        stored,
        vec![START.to_string(), UNDER.to_string(), DEEPER.to_string()],
        "no crossing lost, none twice"
    );
    assert_eq!(leader_of(&http, &[follower]).await, Some(follower));
    let all = events(&on_follower, &format!("owner={}", b.owner)).await;
    assert_eq!(all.len(), 1, "one under: {all:?}");
    for child in &mut children {
        let _ = child.kill();
        let _ = child.wait();
    }
}

#[actix_rt::test]
async fn a_stop_stores_the_history_still_queued() {
    let db = TestDb::create().await;
    let http = reqwest::Client::new();
    let port = free_port();
    let mut child = serve(&db, port, &[("LENDEX_HISTORY__FLUSH_INTERVAL_MS", "200")]);
    wait_until_up(&http, &format!("http://127.0.0.1:{port}")).await;
    assert!(
        eventually(Duration::from_secs(20), async || leader_of(&http, &[port])
            .await
            .is_some())
        .await
    );
    let client = db.connect().await;
    let app = Remote::on(port);
    let b = book(&app, &client).await;
    wait_stored(&db, &b.owner, START).await;
    let held = Held::table(&db.url, "history_points").await;
    set_price(&client, &b.sol, 12 * ORACLE_DOLLAR).await;
    assert!(
        eventually(Duration::from_secs(10), async || served(&app, &b.owner)
            .await
            == Some(UNDER.to_string()))
        .await
    );
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    // The stop waits for the held COPY rather than leave the point behind.
    tokio::time::sleep(Duration::from_millis(800)).await;
    held.release().await;
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert_eq!(
        stored_values(&db, &b.owner).await,
        vec![START.to_string(), UNDER.to_string()]
    );
}

#[actix_rt::test]
async fn retention_drops_old_days_whole() {
    let app = spawn_app_with(|c| c.history.retention_days = 3).await;
    let db = app.db.connect().await;
    let today = chrono::Utc::now().date_naive();
    let old = today - chrono::Days::new(3);
    let kept = today - chrono::Days::new(2);
    for day in [old, kept] {
        db.execute("SELECT lendex_history_make_day($1)", &[&day])
            .await
            .unwrap();
        db.execute(
            "INSERT INTO history_points VALUES (1, 1, $1::date + time '12:00', 1, 1, 1, 1)",
            &[&day],
        )
        .await
        .unwrap();
    }
    let writer = app.history.clone().expect("history is on");
    writer
        .send(lendex::actors::history::Maintain)
        .await
        .unwrap()
        .unwrap();
    let days: Vec<chrono::NaiveDate> = db
        .query(
            "SELECT DISTINCT day FROM lendex_history_partitions() ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(days.first(), Some(&kept), "{days:?}");
    assert!(
        days.contains(&(today + chrono::Days::new(2))),
        "made ahead: {days:?}"
    );
    let rows: i64 = db
        .query_one("SELECT count(*) FROM history_points", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(rows, 1, "the kept day's row");
    let (_, body) = app.get("/api/history/market").await;
    assert_eq!(
        body["retention_start"],
        format!("{}T00:00:00.000Z", kept.format("%Y-%m-%d"))
    );
}
