//! The liquidation feed across reconnects and under its caps (docs/design.md §11):
//! every candidate event has an `<epoch>.<sequence>` id and its provenance; a
//! reconnect inside the replay window gets exactly what it missed and no
//! snapshot; anything else gets `reset` and the snapshot; open streams are
//! capped per client address and in total.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::fixtures::feeds::{Feed, under_water};
use crate::fixtures::market::{USD, market};

#[actix_rt::test]
async fn a_reconnect_gets_exactly_the_1000_events_it_missed() {
    let mut m = market(|_| {}).await;
    // Connected all along: what was sent live.
    let mut watcher = Feed::open(&m, None).await;
    let owners = under_water(&m, 50).await;
    let starts = watcher.read(50, Duration::from_secs(20)).await;
    assert_eq!(starts.len(), 50);
    assert!(starts.iter().all(|f| f.event == "candidate_start"));
    // Numbered in increasing order, within one epoch.
    for pair in starts.windows(2) {
        assert!(pair[1].seq() > pair[0].seq());
        assert_eq!(pair[1].epoch(), pair[0].epoch());
    }

    // A subscriber that connects now gets the snapshot, stamped with the last
    // live event its state includes, then goes away.
    let mut gone = Feed::open(&m, None).await;
    let snapshot = gone.read(50, Duration::from_secs(10)).await;
    assert_eq!(snapshot.len(), 50);
    let last_seen = snapshot[0].id.clone().unwrap();
    assert!(
        snapshot
            .iter()
            .all(|f| f.id.as_deref() == Some(last_seen.as_str()))
    );
    // The feed's position then: at or after the last live event.
    assert!(snapshot[0].seq() >= starts.last().unwrap().seq());
    for frame in &snapshot {
        assert!(frame.data["slot"].is_u64(), "provenance: {frame:?}");
        assert!(frame.data["published_at_ms"].as_i64().unwrap() > 1_700_000_000_000);
        assert_eq!(frame.data["liquidation"]["slot"], frame.data["slot"]);
    }
    drop(gone);

    // 20 price moves: 50 updates each, 1000 events missed.
    for i in 1..=20 {
        m.set_sol_price(20 * USD + i * 1_000_000).await;
    }
    let live = watcher.read(1000, Duration::from_secs(30)).await;
    assert_eq!(live.len(), 1000);
    assert!(live.iter().all(|f| f.event == "candidate_update"));
    assert!(live[0].seq() > snapshot[0].seq());

    let asked = Instant::now();
    let mut back = Feed::open(&m, Some(&last_seen)).await;
    let resumed = back.read(1000, Duration::from_secs(20)).await;
    let took = asked.elapsed();
    assert_eq!(
        resumed, live,
        "exactly the missed events, in order, no snapshot"
    );
    eprintln!("1000 missed events resumed in {took:?}");
    // And then the live feed goes on for both.
    m.set_sol_price(25 * USD).await;
    let next = back.read(50, Duration::from_secs(10)).await;
    assert_eq!(next, watcher.read(50, Duration::from_secs(10)).await);
    assert!(next[0].seq() > live[999].seq());
    let _ = owners;
}

#[actix_rt::test]
async fn a_reconnect_outside_the_window_or_epoch_gets_reset_then_the_snapshot() {
    let mut m = market(|c| c.cache.replay_bytes = 4096).await;
    under_water(&m, 3).await;
    let mut first = Feed::open(&m, None).await;
    let snapshot = first.read(3, Duration::from_secs(10)).await;
    let last_seen = snapshot[0].id.clone().unwrap();
    let epoch = snapshot[0].epoch().to_string();
    drop(first);
    // 3 owners x 4 moves: 12 updates of over a kilobyte, past the 4 KiB window.
    for i in 1..=4 {
        m.set_sol_price(20 * USD + i * 1_000_000).await;
    }
    let now = Feed::open(&m, None)
        .await
        .read(3, Duration::from_secs(10))
        .await;
    let current = now[0].id.clone().unwrap();

    let cases = [
        (last_seen.clone(), "replay window"),
        (
            format!("{}.0", epoch.parse::<u64>().unwrap() + 1),
            "another epoch",
        ),
        ("garbage".to_string(), "not an event id"),
        (format!("{epoch}.{}", now[0].seq() + 1000), "ahead"),
    ];
    for (id, why) in cases {
        let mut feed = Feed::open(&m, Some(&id)).await;
        let frames = feed.read(4, Duration::from_secs(10)).await;
        assert_eq!(frames[0].event, "reset", "{id}");
        assert!(frames[0].id.is_none());
        let reason = frames[0].data["reason"].as_str().unwrap();
        assert!(reason.contains(why), "{id}: {reason}");
        assert_eq!(frames[1..].len(), 3, "then the snapshot");
        for f in &frames[1..] {
            assert_eq!(f.event, "candidate_start");
            assert_eq!(f.id.as_deref(), Some(current.as_str()));
        }
    }
    // The current id resumes with nothing to send: no reset, no snapshot.
    let mut feed = Feed::open(&m, Some(&current)).await;
    assert!(feed.read(1, Duration::from_millis(1500)).await.is_empty());
    m.set_sol_price(30 * USD).await;
    let next = feed.read(3, Duration::from_secs(10)).await;
    assert!(
        next.iter().all(|f| f.event == "candidate_update"),
        "{next:?}"
    );
    assert!(next[0].seq() > now[0].seq());
}

#[actix_rt::test]
async fn open_streams_are_capped_per_address_and_in_total() {
    let m = market(|c| {
        c.server.max_streams_per_ip = 2;
        c.server.max_streams = 3;
    })
    .await;
    let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
    let a1 = Feed::open_from(&m, None, ip("127.0.0.1"))
        .await
        .ok()
        .unwrap();
    let _a2 = Feed::open_from(&m, None, ip("127.0.0.1"))
        .await
        .ok()
        .unwrap();
    let refused = Feed::open_from(&m, None, ip("127.0.0.1"))
        .await
        .err()
        .unwrap();
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().contains_key("retry-after"));
    assert_eq!(decode(refused).await.1, error("rate limited"));

    let _b = Feed::open_from(&m, None, ip("127.0.0.2"))
        .await
        .ok()
        .unwrap();
    let refused = Feed::open_from(&m, None, ip("127.0.0.3"))
        .await
        .err()
        .unwrap();
    assert_eq!(refused.status(), 429, "past the total");
    assert!(refused.headers().contains_key("retry-after"));

    // A stream that ends frees its place (noticed at the next keep-alive).
    drop(a1);
    let freed = eventually(Duration::from_secs(10), async || {
        Feed::open_from(&m, None, ip("127.0.0.3")).await.is_ok()
    })
    .await;
    assert!(freed);

    let text = m.t.app.metrics_text().await;
    for cap in ["per_address", "total"] {
        let line = format!("lendex_sse_refused_total{{cap=\"{cap}\"}} ");
        assert!(
            text.lines()
                .any(|l| l.starts_with(&line) && !l.ends_with(" 0")),
            "{cap} refusals counted"
        );
    }
}
