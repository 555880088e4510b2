//! The chain reader: the only way the service talks to the chain.
//!
//! It owns the Solana RPC client (pointed at the server's configured endpoint,
//! never a caller's), and keeps every request inside a global rate limit
//! (governor) and a concurrency cap, with a timeout on each request.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use solana_commitment_config::CommitmentConfig;
use solana_rpc_client::nonblocking::rpc_client::RpcClient;
use tokio::sync::Semaphore;

use crate::config::RpcConfig;
use crate::error::{ApiError, ApiResult};

/// Shared by the actor and the futures it spawns.
struct Gate {
    client: RpcClient,
    rate: DefaultDirectRateLimiter,
    in_flight: Semaphore,
    timeout: Duration,
}

impl Gate {
    /// Waits for a rate-limit cell and a concurrency slot, then runs `call` with the
    /// request timeout. Any RPC failure or timeout is `502 rpc unavailable`.
    async fn run<T, E, F>(&self, deadline: Duration, call: F) -> ApiResult<T>
    where
        E: std::fmt::Display,
        F: AsyncFnOnce(&RpcClient) -> Result<T, E>,
    {
        let work = async {
            let _slot = self
                .in_flight
                .acquire()
                .await
                .map_err(|_| ApiError::RpcUnavailable)?;
            self.rate.until_ready().await;
            call(&self.client).await.map_err(|e| {
                tracing::warn!(error = %e, "rpc request failed");
                ApiError::RpcUnavailable
            })
        };
        tokio::time::timeout(deadline, work).await.map_err(|_| {
            tracing::warn!(
                timeout_ms = deadline.as_millis() as u64,
                "rpc request timed out"
            );
            ApiError::RpcUnavailable
        })?
    }
}

pub struct ChainReader {
    gate: Arc<Gate>,
}

impl ChainReader {
    pub fn new(cfg: &RpcConfig) -> ChainReader {
        let timeout = Duration::from_millis(cfg.timeout_ms.max(1));
        let client = RpcClient::new_with_timeout_and_commitment(
            cfg.url.clone(),
            timeout,
            CommitmentConfig::confirmed(),
        );
        let rps = NonZeroU32::new(cfg.max_rps).unwrap_or(NonZeroU32::MIN);
        // Burst of one: requests are spread evenly, never more than max_rps in any second.
        let rate = RateLimiter::direct(Quota::per_second(rps).allow_burst(NonZeroU32::MIN));
        let gate = Gate {
            client,
            rate,
            in_flight: Semaphore::new(cfg.max_concurrency),
            timeout,
        };
        ChainReader {
            gate: Arc::new(gate),
        }
    }
}

impl Actor for ChainReader {
    type Context = Context<Self>;
}

/// The current slot at `confirmed` commitment, answered within `deadline`.
#[derive(Message)]
#[rtype(result = "ApiResult<u64>")]
pub struct GetSlot {
    pub deadline: Duration,
}

impl Handler<GetSlot> for ChainReader {
    type Result = ResponseFuture<ApiResult<u64>>;

    fn handle(&mut self, msg: GetSlot, _: &mut Self::Context) -> Self::Result {
        let gate = self.gate.clone();
        Box::pin(async move {
            let deadline = msg.deadline.min(gate.timeout);
            gate.run(deadline, async |c| {
                c.get_slot_with_commitment(CommitmentConfig::confirmed())
                    .await
            })
            .await
        })
    }
}
