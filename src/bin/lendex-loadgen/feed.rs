//! A reader of Lendex's SSE feed that timestamps every event as its bytes arrive,
//! and the round timing both price-latency commands share.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio::sync::mpsc::UnboundedReceiver;

/// One event of the feed as it arrived.
pub struct Event {
    pub at: Instant,
    pub name: String,
    pub id: Option<String>,
}

/// Subscribes to /api/positions/unhealthy/stream and sends every event as it
/// arrives; the snapshot sent on connect is drained before returning.
pub async fn subscribe(api: &str) -> UnboundedReceiver<Event> {
    let rx = connect(api, None).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut rx = rx;
    while rx.try_recv().is_ok() {}
    rx
}

/// `subscribe`, to one commitment's stream (docs/design.md §15).
pub async fn subscribe_view(api: &str, view: &str) -> UnboundedReceiver<Event> {
    subscribe_query(api, &format!("?commitment={view}")).await
}

/// `subscribe`, to the stream `query` asks for.
pub async fn subscribe_query(api: &str, query: &str) -> UnboundedReceiver<Event> {
    let mut rx = open(api, query, None).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    while rx.try_recv().is_ok() {}
    rx
}

/// Opens the feed (resuming after `last_event_id`, when given) and sends every
/// event as its bytes arrive; the stream is closed when the receiver is dropped.
pub async fn connect(api: &str, last_event_id: Option<&str>) -> UnboundedReceiver<Event> {
    open(api, "", last_event_id).await
}

async fn open(api: &str, query: &str, last_event_id: Option<&str>) -> UnboundedReceiver<Event> {
    let url = format!("{api}/api/positions/unhealthy/stream{query}");
    let mut req = reqwest::Client::new().get(url);
    if let Some(id) = last_event_id {
        req = req.header("Last-Event-ID", id);
    }
    let res = req.send().await.expect("stream");
    let mut body = res.bytes_stream();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Event>();
    actix_rt::spawn(async move {
        // Frames end with a blank line; parse each chunk once (a 25k-event batch
        // arrives as hundreds of 64 KiB chunks, so no per-frame copying).
        let mut pending: Vec<u8> = Vec::new();
        loop {
            let chunk = match body.next().await {
                Some(Ok(chunk)) => chunk,
                Some(Err(e)) => {
                    eprintln!("feed: the stream failed: {e}");
                    return;
                }
                None => return,
            };
            let at = Instant::now();
            pending.extend_from_slice(&chunk);
            let mut start = 0;
            while let Some(end) = find(&pending[start..], b"\n\n") {
                let frame = &pending[start..start + end];
                let field = |name: &[u8]| {
                    frame
                        .split(|&b| b == b'\n')
                        .find_map(|l| l.strip_prefix(name))
                        .map(|v| String::from_utf8_lossy(v).into_owned())
                };
                if let Some(name) = field(b"event: ") {
                    let id = field(b"id: ");
                    if tx.send(Event { at, name, id }).is_err() {
                        return;
                    }
                }
                start += end + 2;
            }
            pending.drain(..start);
        }
    });
    rx
}

/// memmem, not a byte-by-byte window scan: the client shares the two cores with
/// the server it measures, and a sinking round is 50 MB of frames.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

/// One round: the first and the last candidate event after `started`, and
/// how many came, where the round ends after `quiet` without one. Only
/// `candidate_*` events count; a `resync` or `reset` ends the run loudly, since
/// a reader the service dropped (or could not resume) would time the drop, not
/// the feed.
pub async fn round(
    rx: &mut UnboundedReceiver<Event>,
    started: Instant,
    quiet: Duration,
) -> Option<(Duration, Duration, usize)> {
    let first = loop {
        let event = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .ok()??;
        if is_candidate(&event) {
            break event.at;
        }
    };
    let mut last = first;
    let mut events = 1;
    while let Ok(Some(event)) = tokio::time::timeout(quiet, rx.recv()).await {
        if is_candidate(&event) {
            last = event.at;
            events += 1;
        }
    }
    Some((first - started, last - started, events))
}

/// Whether an event is a candidate's; the feed's own news ends the run.
fn is_candidate(event: &Event) -> bool {
    if matches!(event.name.as_str(), "resync" | "reset") {
        eprintln!(
            "the feed sent `{}` (id {:?}): this reader was dropped or could not resume, so the round \
             would time that, not the feed; raise cache.subscriber_max_lag_bytes or read faster",
            event.name, event.id
        );
        std::process::exit(2);
    }
    event.name.starts_with("candidate_")
}

/// Median and nearest-rank p99 (with fewer than 100 rounds, the slowest).
pub fn p50_p99(v: &mut [Duration]) -> (Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[(v.len() * 99).div_ceil(100) - 1])
}

/// The SQL-driven P2: pool 0's price flipped by SQL `rounds` times (as the
/// chain sync would write it), each timed to the first and last SSE event.
pub async fn price_latency(url: &str, api: &str, rounds: usize, low_percent: i64) {
    let db = crate::connect(url).await;
    let pool0 = crate::key("load pool 0");
    let mut rx = subscribe(api).await;
    let (mut first, mut last) = (Vec::new(), Vec::new());
    let base = crate::market::pool_price(0);
    for n in 0..rounds {
        // Alternate: pool 0 at low_percent and back.
        let price = if n % 2 == 0 {
            base * low_percent / 100
        } else {
            base
        };
        let started = Instant::now();
        db.execute(
            "UPDATE pools SET oracle_price = $1 WHERE cluster = 'localnet' AND pool_address = $2",
            &[&price, &pool0],
        )
        .await
        .unwrap();
        let Some((f, l, events)) = round(&mut rx, started, Duration::from_millis(300)).await else {
            println!("round {n}: no event within 10 s");
            continue;
        };
        first.push(f);
        last.push(l);
        println!("round {n}: {events} events, first after {f:?}, last after {l:?}");
    }
    if !first.is_empty() {
        let (f50, f99) = p50_p99(&mut first);
        let (l50, l99) = p50_p99(&mut last);
        println!(
            "price change -> feed ({} rounds): first event median {f50:?} (p99 {f99:?}); last event median {l50:?} (p99 {l99:?})",
            first.len()
        );
    }
    let health: serde_json::Value = reqwest::get(format!("{api}/api/health"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    println!("cache: {}", health["checks"]["cache"]);
}
