//! `GatedSender`: the HTTP transport under `RpcClient`. Every HTTP attempt,
//! retries included, first takes a cell from the global rate limiter (governor)
//! and a slot under the concurrency cap, so the RPC never sees more than
//! `rpc.max_rps` requests in any second. A 429 is retried after its Retry-After.

use std::num::NonZeroU32;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use serde_json::Value;
use solana_rpc_client::rpc_sender::{RpcSender, RpcTransportStats};
use solana_rpc_client_api::client_error::{ErrorKind, Result as ClientResult};
use solana_rpc_client_api::request::{RpcError, RpcRequest, RpcResponseErrorData};
use tokio::sync::Semaphore;

/// 429 answers retried before giving up (the caller's deadline usually ends it first).
const MAX_RATE_LIMITED_RETRIES: u32 = 8;
/// Wait after a 429 without a usable Retry-After.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_millis(500);
/// Longest Retry-After honoured; a longer one fails the request instead.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

pub struct GatedSender {
    http: reqwest::Client,
    url: String,
    rate: DefaultDirectRateLimiter,
    in_flight: Semaphore,
    request_id: AtomicU64,
    stats: RwLock<RpcTransportStats>,
}

impl GatedSender {
    pub fn new(url: String, timeout: Duration, max_rps: u32, max_concurrency: usize) -> Self {
        let rps = NonZeroU32::new(max_rps).unwrap_or(NonZeroU32::MIN);
        GatedSender {
            http: reqwest::Client::builder()
                .timeout(timeout)
                .build()
                .expect("reqwest client builds"),
            url,
            // Burst of one: requests are spread evenly, never above max_rps in any second.
            rate: RateLimiter::direct(Quota::per_second(rps).allow_burst(NonZeroU32::MIN)),
            in_flight: Semaphore::new(max_concurrency.max(1)),
            request_id: AtomicU64::new(1),
            stats: RwLock::new(RpcTransportStats::default()),
        }
    }

    /// One HTTP exchange through the gate: (status, Retry-After, body).
    async fn exchange(
        &self,
        body: &str,
    ) -> ClientResult<(reqwest::StatusCode, Option<Duration>, Vec<u8>)> {
        let _slot = self
            .in_flight
            .acquire()
            .await
            .map_err(|_| ErrorKind::Custom("rpc sender closed".into()))?;
        self.rate.until_ready().await;
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

#[async_trait]
impl RpcSender for GatedSender {
    async fn send(&self, request: RpcRequest, params: Value) -> ClientResult<Value> {
        let started = Instant::now();
        let id = self.request_id.fetch_add(1, Ordering::Relaxed);
        let body = request.build_request_json(id, params).to_string();
        let mut waited = Duration::ZERO;
        let mut retries = 0;
        let result = loop {
            let (status, retry_after, bytes) = self.exchange(&body).await?;
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
