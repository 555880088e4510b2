//! A reader of Lendex's SSE feed that timestamps every event as its bytes arrive,
//! and the round timing both price-latency commands share.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio::sync::mpsc::UnboundedReceiver;

/// Subscribes to /api/positions/unhealthy/stream and sends (arrival, event name)
/// for every event; the snapshot sent on connect is drained before returning.
pub async fn subscribe(api: &str) -> UnboundedReceiver<(Instant, String)> {
    let res = reqwest::Client::new()
        .get(format!("{api}/api/positions/unhealthy/stream"))
        .send()
        .await
        .expect("stream");
    let mut body = res.bytes_stream();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(Instant, String)>();
    actix_rt::spawn(async move {
        // Frames end with a blank line; parse each chunk once (a 25k-event batch
        // arrives as hundreds of 64 KiB chunks, so no per-frame copying).
        let mut pending: Vec<u8> = Vec::new();
        while let Some(Ok(chunk)) = body.next().await {
            let at = Instant::now();
            pending.extend_from_slice(&chunk);
            let mut start = 0;
            while let Some(end) = find(&pending[start..], b"\n\n") {
                let frame = &pending[start..start + end];
                if let Some(name) = frame
                    .split(|&b| b == b'\n')
                    .find_map(|l| l.strip_prefix(b"event: "))
                {
                    let _ = tx.send((at, String::from_utf8_lossy(name).into_owned()));
                }
                start += end + 2;
            }
            pending.drain(..start);
        }
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    while rx.try_recv().is_ok() {}
    rx
}

/// memmem, not a byte-by-byte window scan: the client shares the two cores with
/// the server it measures, and a sinking round is 50 MB of frames.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

/// One round: the first and the last event after `started`, and how many came,
/// where the round ends after `quiet` without an event.
pub async fn round(
    rx: &mut UnboundedReceiver<(Instant, String)>,
    started: Instant,
    quiet: Duration,
) -> Option<(Duration, Duration, usize)> {
    let (first, _) = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .ok()??;
    let mut last = first;
    let mut events = 1;
    while let Ok(Some((t, _))) = tokio::time::timeout(quiet, rx.recv()).await {
        last = t;
        events += 1;
    }
    Some((first - started, last - started, events))
}

/// Median and nearest-rank p99 (with fewer than 100 rounds, the slowest).
pub fn p50_p99(v: &mut [Duration]) -> (Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[(v.len() * 99).div_ceil(100) - 1])
}
