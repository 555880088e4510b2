//! The chain reader: the only way the service talks to the chain.
//!
//! It owns the Solana RPC client, built on `GatedSender` (global rate limit and
//! concurrency cap on every HTTP attempt), always pointed at the server's
//! configured endpoint and never at a caller's. It coalesces identical in-flight
//! reads: any number of concurrent requests for the same accounts share one RPC
//! call. Every read has a deadline; past it the caller gets 502 rpc unavailable.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};
use solana_rpc_client::nonblocking::rpc_client::RpcClient;

use crate::chain::rpc::{self, AccountRead, Filter, RawAccount};
use crate::chain::settings::RpcConfig;
use crate::domain::accounts::{POOL_DISCRIMINATOR, POSITION_DISCRIMINATOR, POSITION_POOL_OFFSET};
use crate::domain::pubkey::Pubkey;
use crate::error::{ActorError, ActorResult};

type Reads = Arc<Vec<AccountRead>>;
type SharedRead = Shared<BoxFuture<'static, ActorResult<Reads>>>;

pub struct ChainReader {
    client: Arc<RpcClient>,
    timeout: Duration,
    in_flight: HashMap<Vec<Pubkey>, SharedRead>,
}

impl ChainReader {
    pub fn new(cfg: &RpcConfig) -> ChainReader {
        // An account read may first wait its turn at the gate (at most max_queue_ms).
        let timeout = Duration::from_millis(cfg.timeout_ms.max(1) + cfg.max_queue_ms);
        let client = rpc::gated_client(cfg);
        ChainReader {
            client: Arc::new(client),
            timeout,
            in_flight: HashMap::new(),
        }
    }
}

impl Actor for ChainReader {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(4096);
    }
}

/// Runs `work` within `deadline`; an RPC failure or a timeout is 502.
async fn within<T, E: std::fmt::Display>(
    deadline: Duration,
    what: &'static str,
    work: impl Future<Output = Result<T, E>>,
) -> ActorResult<T> {
    match tokio::time::timeout(deadline, work).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(ActorError::rpc(format!("{what} failed: {e}"))),
        Err(_) => Err(ActorError::rpc(format!(
            "{what} timed out after {} ms",
            deadline.as_millis()
        ))),
    }
}

/// The current slot at `confirmed` commitment, answered within `deadline`.
#[derive(Message)]
#[rtype(result = "ActorResult<u64>")]
pub struct GetSlot {
    pub deadline: Duration,
}

impl Handler<GetSlot> for ChainReader {
    type Result = ResponseFuture<ActorResult<u64>>;

    fn handle(&mut self, msg: GetSlot, _: &mut Self::Context) -> Self::Result {
        let client = self.client.clone();
        let deadline = msg.deadline.min(self.timeout);
        Box::pin(async move { within(deadline, "getSlot", rpc::get_slot(&client)).await })
    }
}

/// Reads accounts (getMultipleAccounts, batches of 100), in the order given.
#[derive(Message)]
#[rtype(result = "ActorResult<Arc<Vec<AccountRead>>>")]
pub struct ReadAccounts {
    pub keys: Vec<Pubkey>,
}

impl Handler<ReadAccounts> for ChainReader {
    type Result = ResponseFuture<ActorResult<Reads>>;

    fn handle(&mut self, msg: ReadAccounts, ctx: &mut Self::Context) -> Self::Result {
        if let Some(running) = self.in_flight.get(&msg.keys) {
            return Box::pin(running.clone());
        }
        let client = self.client.clone();
        let keys = msg.keys.clone();
        let deadline = self.timeout;
        let read: SharedRead = async move {
            within(
                deadline,
                "getMultipleAccounts",
                rpc::get_accounts(&client, &keys),
            )
            .await
            .map(Arc::new)
        }
        .boxed()
        .shared();
        self.in_flight.insert(msg.keys.clone(), read.clone());
        // Forget the entry once the read is done, whoever is still waiting on it.
        let key = msg.keys;
        ctx.spawn(read.clone().into_actor(self).map(move |_, act, _| {
            act.in_flight.remove(&key);
        }));
        Box::pin(read)
    }
}

/// Every UserPosition account of one pool (getProgramAccounts with a memcmp on
/// the discriminator and the pool field), with the slot.
#[derive(Message)]
#[rtype(result = "ActorResult<(u64, Vec<(Pubkey, RawAccount)>)>")]
pub struct ScanPoolPositions {
    pub program: Pubkey,
    pub pool: Pubkey,
    pub deadline: Duration,
}

impl Handler<ScanPoolPositions> for ChainReader {
    type Result = ResponseFuture<ActorResult<(u64, Vec<(Pubkey, RawAccount)>)>>;

    fn handle(&mut self, msg: ScanPoolPositions, _: &mut Self::Context) -> Self::Result {
        let client = self.client.clone();
        Box::pin(async move {
            // No dataSize filter: an account allocated larger than the layout
            // (a program upgrade's realloc) is still a position; the
            // discriminator and the pool field say what it is, and decoding
            // ignores trailing bytes.
            let filters = [
                Filter::Memcmp {
                    offset: 0,
                    bytes: &POSITION_DISCRIMINATOR,
                },
                Filter::Memcmp {
                    offset: POSITION_POOL_OFFSET,
                    bytes: msg.pool.as_ref(),
                },
            ];
            let work = rpc::get_program_accounts(&client, &msg.program, &filters);
            within(msg.deadline, "getProgramAccounts", work).await
        })
    }
}

/// Every LendingPool account of the program (getProgramAccounts with a memcmp
/// on the discriminator), with the slot: registered or not.
#[derive(Message)]
#[rtype(result = "ActorResult<(u64, Vec<(Pubkey, RawAccount)>)>")]
pub struct ScanPools {
    pub program: Pubkey,
    pub deadline: Duration,
}

impl Handler<ScanPools> for ChainReader {
    type Result = ResponseFuture<ActorResult<(u64, Vec<(Pubkey, RawAccount)>)>>;

    fn handle(&mut self, msg: ScanPools, _: &mut Self::Context) -> Self::Result {
        let client = self.client.clone();
        Box::pin(async move {
            let filters = [Filter::Memcmp {
                offset: 0,
                bytes: &POOL_DISCRIMINATOR,
            }];
            let work = rpc::get_program_accounts(&client, &msg.program, &filters);
            within(msg.deadline, "getProgramAccounts", work).await
        })
    }
}

/// The signature that created an account, when the chain can tell it in one
/// page of signatures (`rpc::first_signature`).
#[derive(Message)]
#[rtype(result = "ActorResult<Option<String>>")]
pub struct FirstSignature {
    pub address: Pubkey,
    pub deadline: Duration,
}

/// Signatures asked for at once: a pool whose history is longer has no
/// signature found (the operator gives it).
const SIGNATURE_PAGE: usize = 1000;

impl Handler<FirstSignature> for ChainReader {
    type Result = ResponseFuture<ActorResult<Option<String>>>;

    fn handle(&mut self, msg: FirstSignature, _: &mut Self::Context) -> Self::Result {
        let client = self.client.clone();
        Box::pin(async move {
            let work = rpc::first_signature(&client, &msg.address, SIGNATURE_PAGE);
            within(msg.deadline, "getSignaturesForAddress", work).await
        })
    }
}
