//! `GatedSender`: the HTTP transport under `RpcClient`. Every HTTP attempt,
//! retries included, first takes a slot under the concurrency cap and a cell
//! from the global rate limiter (governor), so the RPC never sees more than
//! `rpc.max_rps` requests in any second. A 429 is retried after its Retry-After.
//!
//! The gate is fair: requests are admitted in arrival order (tokio's semaphore
//! and mutex queue their waiters first come, first served, and only the
//! mutex's holder waits on governor, whose own waiters are not ordered), so
//! nobody waits longer than the queue ahead of it needs. A request that would
//! wait more than `rpc.max_queue_ms` (the queue ahead / max_rps) fails at once.

use std::num::NonZeroU32;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use serde_json::Value;
use solana_rpc_client::rpc_sender::{RpcSender, RpcTransportStats};
use solana_rpc_client_api::client_error::{ErrorKind, Result as ClientResult};
use solana_rpc_client_api::request::{RpcError, RpcRequest, RpcResponseErrorData};
use tokio::sync::{Mutex, Semaphore};

/// 429 answers retried before giving up (the caller's deadline usually ends it first).
const MAX_RATE_LIMITED_RETRIES: u32 = 8;
/// Wait after a 429 without a usable Retry-After.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_millis(500);
/// Longest Retry-After honoured; a longer one fails the request instead.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

pub(crate) struct GatedSender {
    http: reqwest::Client,
    url: String,
    rate: DefaultDirectRateLimiter,
    /// The turn at the rate limiter, in arrival order.
    turn: Mutex<()>,
    in_flight: Semaphore,
    /// Attempts waiting at the gate, and how many may wait (max_queue x max_rps).
    waiting: AtomicUsize,
    max_waiting: usize,
    request_id: AtomicU64,
    stats: RwLock<RpcTransportStats>,
}

impl GatedSender {
    pub(crate) fn new(
        url: String,
        timeout: Duration,
        max_rps: u32,
        max_concurrency: usize,
        max_queue: Duration,
    ) -> Self {
        let rps = NonZeroU32::new(max_rps).unwrap_or(NonZeroU32::MIN);
        GatedSender {
            http: reqwest::Client::builder()
                .timeout(timeout)
                .build()
                .expect("reqwest client builds"),
            url,
            // Burst of one: requests are spread evenly, never above max_rps in any second.
            rate: RateLimiter::direct(Quota::per_second(rps).allow_burst(NonZeroU32::MIN)),
            turn: Mutex::new(()),
            in_flight: Semaphore::new(max_concurrency.max(1)),
            waiting: AtomicUsize::new(0),
            max_waiting: max_waiting(max_queue, rps.get()),
            request_id: AtomicU64::new(1),
            stats: RwLock::new(RpcTransportStats::default()),
        }
    }

    /// One HTTP exchange through the gate: (status, Retry-After, body).
    async fn exchange(
        &self,
        body: &str,
    ) -> ClientResult<(reqwest::StatusCode, Option<Duration>, Vec<u8>)> {
        let _slot = self.admit().await?;
        let response = self
            .http
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .send()
            .await?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let bytes = response.bytes().await?;
        Ok((status, retry_after, bytes.to_vec()))
    }
}

impl GatedSender {
    /// Waits for this attempt's turn, in arrival order: a concurrency slot, then
    /// a rate cell. Fails at once when the queue ahead is longer than allowed.
    async fn admit(&self) -> ClientResult<tokio::sync::SemaphorePermit<'_>> {
        let ahead = self.waiting.fetch_add(1, Ordering::AcqRel);
        let _waiting = Waiting(&self.waiting);
        if ahead >= self.max_waiting {
            return Err(ErrorKind::Custom(format!(
                "rpc queue full: {ahead} requests ahead at the rate limit"
            ))
            .into());
        }
        let started = Instant::now();
        let slot = self
            .in_flight
            .acquire()
            .await
            .map_err(|_| ErrorKind::Custom("rpc sender closed".into()))?;
        let _turn = self.turn.lock().await;
        self.rate.until_ready().await;
        crate::metrics::rpc_gate_wait(started.elapsed());
        Ok(slot)
    }
}

/// Counts an attempt as waiting until it is admitted (or gives up).
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// How many attempts may wait: as many as the rate admits within `max_queue`.
fn max_waiting(max_queue: Duration, rps: u32) -> usize {
    ((max_queue.as_secs_f64() * f64::from(rps)).ceil() as usize).max(1)
}

#[async_trait]
impl RpcSender for GatedSender {
    async fn send(&self, request: RpcRequest, params: Value) -> ClientResult<Value> {
        let started = Instant::now();
        let id = self.request_id.fetch_add(1, Ordering::Relaxed);
        let body = request.build_request_json(id, params).to_string();
        let mut waited = Duration::ZERO;
        let mut retries = 0;
        let result = loop {
            let (status, retry_after, bytes) = match self.exchange(&body).await {
                Ok(answer) => answer,
                Err(e) => {
                    let outcome = if matches!(e.kind(), ErrorKind::Custom(m) if m.starts_with("rpc queue full"))
                    {
                        "queue_full"
                    } else {
                        "error"
                    };
                    crate::metrics::rpc_request(&request.to_string(), outcome, started.elapsed());
                    return Err(e);
                }
            };
            if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
                crate::metrics::rpc_rate_limited();
            }
            if status == reqwest::StatusCode::TOO_MANY_REQUESTS
                && retries < MAX_RATE_LIMITED_RETRIES
            {
                let wait = retry_after.unwrap_or(DEFAULT_RETRY_AFTER);
                if wait > MAX_RETRY_AFTER {
                    break Err(ErrorKind::Custom(format!("rpc rate limited for {wait:?}")).into());
                }
                tracing::debug!(?wait, "rpc answered 429; retrying after Retry-After");
                tokio::time::sleep(wait).await;
                waited += wait;
                retries += 1;
                continue;
            }
            if !status.is_success() {
                break Err(ErrorKind::Custom(format!("rpc answered HTTP {status}")).into());
            }
            break parse_response(&bytes);
        };
        let outcome = match &result {
            Ok(_) => "ok",
            Err(e) if matches!(e.kind(), ErrorKind::Custom(m) if m.starts_with("rpc rate limited")) => {
                "rate_limited"
            }
            Err(_) => "error",
        };
        crate::metrics::rpc_request(&request.to_string(), outcome, started.elapsed());
        let mut stats = self.stats.write().unwrap_or_else(|e| e.into_inner());
        stats.request_count += 1;
        stats.elapsed_time += started.elapsed();
        stats.rate_limited_time += waited;
        result
    }

    fn get_transport_stats(&self) -> RpcTransportStats {
        self.stats.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn url(&self) -> String {
        self.url.clone()
    }
}

/// The `result` of a JSON-RPC answer, or its `error` as an RPC error.
fn parse_response(bytes: &[u8]) -> ClientResult<Value> {
    let mut json: Value = serde_json::from_slice(bytes)?;
    if !json.is_object() {
        return Err(RpcError::RpcRequestError("RPC response is not a JSON object".into()).into());
    }
    if let Some(error) = json.get("error").filter(|e| e.is_object()) {
        return Err(RpcError::RpcResponseError {
            code: error["code"].as_i64().unwrap_or(0),
            message: error["message"].as_str().unwrap_or("rpc error").to_string(),
            data: RpcResponseErrorData::Empty,
        }
        .into());
    }
    Ok(json["result"].take())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_holds_what_the_rate_admits_in_max_queue() {
        assert_eq!(max_waiting(Duration::from_secs(10), 40), 400);
        assert_eq!(max_waiting(Duration::from_millis(1), 40), 1);
    }

    /// Admission follows arrival order: each of 30 waiters is admitted after
    /// every one that asked before it (governor alone does not order its waiters).
    #[tokio::test]
    async fn admission_is_first_come_first_served() {
        let sender = std::sync::Arc::new(GatedSender::new(
            "http://127.0.0.1:9".into(),
            Duration::from_secs(1),
            100,
            4,
            Duration::from_secs(10),
        ));
        let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..30 {
            let (sender, order) = (sender.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let _slot = sender.admit().await.unwrap();
                order.lock().unwrap().push(i);
            }));
            // Arrival order is spawn order.
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        for t in tasks {
            t.await.unwrap();
        }
        let order = order.lock().unwrap().clone();
        assert_eq!(order, (0..30).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn a_full_queue_fails_at_once() {
        let sender = std::sync::Arc::new(GatedSender::new(
            "http://127.0.0.1:9".into(),
            Duration::from_secs(1),
            1,
            1,
            Duration::from_millis(1500),
        ));
        // Two may wait at 1 request/s for 1.5 s; hold the only slot.
        let held = sender.admit().await.unwrap();
        let (a, b) = (sender.clone(), sender.clone());
        let waiters = [
            tokio::spawn(async move { a.admit().await.map(|_| ()) }),
            tokio::spawn(async move { b.admit().await.map(|_| ()) }),
        ];
        tokio::time::sleep(Duration::from_millis(50)).await;
        let started = std::time::Instant::now();
        assert!(sender.admit().await.is_err(), "a third is refused");
        assert!(started.elapsed() < Duration::from_millis(100), "at once");
        drop(held);
        for w in waiters {
            assert!(w.await.unwrap().is_ok());
        }
    }

    #[test]
    fn results_and_errors() {
        assert_eq!(
            parse_response(br#"{"jsonrpc":"2.0","id":1,"result":42}"#).unwrap(),
            Value::from(42)
        );
        assert!(
            parse_response(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#)
                .is_err()
        );
        assert!(parse_response(b"[1]").is_err());
        assert!(parse_response(b"<html>").is_err());
    }
}
