//! One feed across replicas (docs/design.md §13): replicas on one database number
//! the same events alike, with the same data, whether anyone listens or not;
//! an id from one resumes on another with exactly the events after it; a
//! replica that has not applied the change an id names waits for it; a
//! foreign, too old or never issued id gets `reset` and the snapshot; a
//! replica behind the pruned log reloads rather than apply it with a hole.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::*;
use crate::fixtures::feeds::{Feed, Frame, under_water};
use crate::fixtures::market::{USD, market};
use crate::fixtures::replicas::{Replica, second_replica, second_replica_with};

/// An event as every replica must send it: its id, name and data but the
/// two fields each replica judges by its own clock.
fn same_everywhere(frame: &Frame) -> (Option<String>, String, Value) {
    let mut data = frame.data.clone();
    strip(&mut data);
    (frame.id.clone(), frame.event.clone(), data)
}

fn strip(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("published_at_ms");
            map.remove("oracle_stale");
            map.values_mut().for_each(strip);
        }
        Value::Array(items) => items.iter_mut().for_each(strip),
        _ => {}
    }
}

fn alike(frames: &[Frame]) -> Vec<(Option<String>, String, Value)> {
    frames.iter().map(same_everywhere).collect()
}

async fn open(base: &str, last_event_id: Option<&str>) -> Feed {
    match Feed::open_at(base, last_event_id, None).await {
        Ok(feed) => feed,
        Err(res) => panic!("{base}: {}", res.status()),
    }
}

/// Resumes counted by outcome on a replica.
async fn resumes(base: &str, outcome: &str) -> u64 {
    let text = get_text(&reqwest::Client::new(), &format!("{base}/metrics")).await;
    let wanted = format!("outcome=\"{outcome}\"");
    text.lines()
        .filter(|l| l.starts_with("lendex_sse_reconnects_total") && l.contains(&wanted))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

#[actix_rt::test]
async fn three_replicas_number_alike_and_resume_each_others_ids() {
    let mut m = market(|_| {}).await;
    let a = m.t.app.url("");
    let b = second_replica(&m).await;
    // The third keeps a small window: 1000 events do not fit it.
    let c = second_replica_with(&m, &[("LENDEX_CACHE__REPLAY_BYTES", "65536")]).await;
    let bases = [a.clone(), b.base.clone(), c.base.clone()];
    let mut watchers = Vec::new();
    for base in &bases {
        watchers.push(open(base, None).await);
    }

    // 50 owners sink, written through replica A.
    under_water(&m, 50).await;
    let mut starts = Vec::new();
    for watcher in &mut watchers {
        starts.push(watcher.read(50, Duration::from_secs(20)).await);
    }
    assert_eq!(starts[0].len(), 50);
    assert!(starts[0].iter().all(|f| f.event == "candidate_start"));
    for other in &starts[1..] {
        assert_eq!(alike(other), alike(&starts[0]), "same ids and data");
    }

    // A subscriber of A takes the snapshot and goes away.
    let mut gone = open(&a, None).await;
    let snapshot = gone.read(50, Duration::from_secs(10)).await;
    let last_seen = snapshot[0].id.clone().unwrap();
    drop(gone);

    // 20 price moves: 1000 updates, the same on every replica.
    for i in 1..=20 {
        m.set_sol_price(20 * USD + i * 1_000_000).await;
    }
    let mut live = Vec::new();
    for watcher in &mut watchers {
        live.push(watcher.read(1000, Duration::from_secs(30)).await);
    }
    assert_eq!(live[0].len(), 1000);
    for other in &live[1..] {
        assert_eq!(alike(other), alike(&live[0]), "same ids and data");
    }

    // A's id resumes on B: exactly the 1000 missed events, no snapshot.
    let mut on_b = open(&b.base, Some(&last_seen)).await;
    let resumed = on_b.read(1000, Duration::from_secs(20)).await;
    assert_eq!(alike(&resumed), alike(&live[0]));
    assert_eq!(resumes(&b.base, "resumed").await, 1);
    // On C the missed events are past its window: reset, then the snapshot.
    let mut on_c = open(&c.base, Some(&last_seen)).await;
    let frames = on_c.read(51, Duration::from_secs(10)).await;
    assert_eq!(frames[0].event, "reset");
    assert!(
        frames[0].data["reason"]
            .as_str()
            .unwrap()
            .contains("replay window")
    );
    assert!(frames[1..].iter().all(|f| f.event == "candidate_start"));
    let position = frames[1].id.clone().unwrap();

    // Another database's epoch, and an id never issued (a tick the clock
    // has not reached): reset at once, without the wait for a change.
    let epoch = live[0][0].epoch().parse::<u64>().unwrap();
    let ahead = live[0][999].seq() + (1000u64 << 24);
    for (id, why, outcome) in [
        (format!("{}.5", epoch + 1), "another epoch", "reset_epoch"),
        (format!("{epoch}.{ahead}"), "ahead", "reset_unknown"),
    ] {
        let before = resumes(&b.base, outcome).await;
        let mut feed = open(&b.base, Some(&id)).await;
        let frames = feed.read(51, Duration::from_secs(10)).await;
        assert_eq!(frames[0].event, "reset", "{id}");
        let reason = frames[0].data["reason"].as_str().unwrap();
        assert!(reason.contains(why), "{id}: {reason}");
        assert_eq!(frames.len(), 51, "then the snapshot");
        assert_eq!(resumes(&b.base, outcome).await, before + 1);
    }
    assert_eq!(resumes(&b.base, "reset_late").await, 0);

    // The snapshot's position from C resumes on A with what follows.
    let mut on_a = open(&a, Some(&position)).await;
    m.set_sol_price(30 * USD).await;
    let next = on_a.read(50, Duration::from_secs(10)).await;
    assert_eq!(
        alike(&next),
        alike(&on_b.read(50, Duration::from_secs(10)).await)
    );
    assert!(next.iter().all(|f| f.event == "candidate_update"));
}

/// Stops a replica's process, or lets it go on.
fn signal(replica: &Replica, name: &str) {
    let status = std::process::Command::new("kill")
        .args([name, &replica.process.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[actix_rt::test]
async fn a_resume_naming_a_change_not_applied_yet_waits_for_it() {
    let mut m = market(|_| {}).await;
    let a = m.t.app.url("");
    let b = second_replica(&m).await;
    under_water(&m, 5).await;
    let mut watcher = open(&a, None).await;
    let snapshot = watcher.read(5, Duration::from_secs(10)).await;
    assert_eq!(snapshot.len(), 5);
    // B sees the 5 owners too before it stops.
    let mut on_b = open(&b.base, None).await;
    assert_eq!(on_b.read(5, Duration::from_secs(10)).await.len(), 5);
    drop(on_b);

    // B stops; A applies a price move; B's reads of the change log are then
    // held up by a lock, so B cannot have applied the move when asked.
    signal(&b, "-STOP");
    m.set_sol_price(21 * USD).await;
    let moved = watcher.read(5, Duration::from_secs(10)).await;
    assert_eq!(moved.len(), 5);
    let mut db = m.t.app.db.connect().await;
    let lock = db.transaction().await.unwrap();
    lock.batch_execute("LOCK TABLE feed_changes IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    signal(&b, "-CONT");

    // Resumed from the move's first event: the wait lasts until the lock goes.
    let first = moved[0].id.clone().unwrap();
    let base = b.base.clone();
    let asked = Instant::now();
    let resume = actix_rt::spawn(async move {
        let mut feed = open(&base, Some(&first)).await;
        (Instant::now(), feed.read(4, Duration::from_secs(10)).await)
    });
    tokio::time::sleep(Duration::from_millis(600)).await;
    lock.rollback().await.unwrap();
    let (answered, frames) = resume.await.unwrap();
    assert_eq!(alike(&frames), alike(&moved[1..]), "the rest, no reset");
    assert!(
        answered.duration_since(asked) >= Duration::from_millis(500),
        "it waited for the change"
    );
    assert_eq!(resumes(&b.base, "resumed").await, 1);
}

/// A replica stopped longer than the change log is kept finds its ticks
/// pruned: it reloads everything (never applies a log with a hole), serves
/// what the others serve, and an id from before can no longer resume there.
#[actix_rt::test]
async fn a_replica_behind_the_pruned_log_reloads_and_stays_right() {
    let mut m = market(|c| c.cache.change_log_seconds = 1).await;
    let a = m.t.app.url("");
    let b = second_replica(&m).await;
    under_water(&m, 5).await;
    let mut on_b = open(&b.base, None).await;
    let snapshot = on_b.read(5, Duration::from_secs(10)).await;
    assert_eq!(snapshot.len(), 5);
    let old_id = snapshot[0].id.clone().unwrap();

    signal(&b, "-STOP");
    let db = m.t.app.db.connect().await;
    let tick = async || -> (i64, i64) {
        let row = db
            .query_one("SELECT tick, pruned_through FROM feed_clock", &[])
            .await
            .unwrap();
        (row.get(0), row.get(1))
    };
    let (stopped_at, _) = tick().await;
    for i in 1..=3 {
        m.set_sol_price(20 * USD + i * 2_000_000).await;
    }
    // The lease holder (A) prunes every 10 s what is older than a second.
    assert!(
        eventually(Duration::from_secs(30), async || tick().await.1
            > stopped_at)
        .await,
        "the ticks B missed were pruned"
    );
    signal(&b, "-CONT");

    let http = reqwest::Client::new();
    let unhealthy = |base: &str| format!("{base}/api/positions/unhealthy?limit=50");
    let on_a = get_json(&http, &unhealthy(&a)).await;
    assert!(
        eventually(Duration::from_secs(15), async || get_json(
            &http,
            &unhealthy(&b.base)
        )
        .await
            == on_a)
        .await,
        "B serves what A serves after its reload"
    );
    // An id from before the reload resumes no more: the events between are
    // not numbered here.
    drop(on_b);
    let mut again = open(&b.base, Some(&old_id)).await;
    let frames = again.read(6, Duration::from_secs(10)).await;
    assert_eq!(frames[0].event, "reset", "{frames:?}");
    assert_eq!(frames.len(), 6, "then the snapshot");
}
