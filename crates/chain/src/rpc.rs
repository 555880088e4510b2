//! The typed reads the service makes, each returning the context slot it was
//! read at (so an older read can never overwrite a newer row). Accounts are
//! requested base64-encoded at `confirmed` commitment.

use std::time::Duration;

use base64::Engine as _;
use solana_commitment_config::CommitmentConfig;
use solana_rpc_client::rpc_client::RpcClientConfig;

use super::sender::GatedSender;
use crate::settings::RpcConfig;
use serde::Deserialize;
use serde_json::{Value, json};
use solana_rpc_client::nonblocking::rpc_client::RpcClient;
use solana_rpc_client_api::client_error::{ErrorKind, Result as ClientResult};
use solana_rpc_client_api::request::RpcRequest;

use lendex_domain::pubkey::Pubkey;

/// The RPC client the service uses: `GatedSender` under it (rate limit, concurrency
/// cap, 429 handling), `confirmed` commitment, the configured endpoint.
pub fn gated_client(cfg: &RpcConfig) -> RpcClient {
    let timeout = Duration::from_millis(cfg.timeout_ms.max(1));
    let sender = GatedSender::new(
        cfg.url.clone(),
        timeout,
        cfg.max_rps,
        cfg.max_concurrency,
        Duration::from_millis(cfg.max_queue_ms),
    );
    RpcClient::new_sender(
        sender,
        RpcClientConfig::with_commitment(CommitmentConfig::confirmed()),
    )
}

/// getMultipleAccounts takes at most this many keys per call.
pub const MAX_ACCOUNTS_PER_CALL: usize = 100;

pub use lendex_domain::raw::{AccountRead, RawAccount};

#[derive(Deserialize)]
struct Context {
    slot: u64,
}

#[derive(Deserialize)]
struct WithContext<T> {
    context: Context,
    value: T,
}

#[derive(Deserialize)]
struct UiAccount {
    data: (String, String),
    owner: String,
    lamports: u64,
}

#[derive(Deserialize)]
struct KeyedAccount {
    pubkey: String,
    account: UiAccount,
}

/// Some RPC servers ignore `withContext` on getProgramAccounts.
#[derive(Deserialize)]
#[serde(untagged)]
enum MaybeContext<T> {
    Context(WithContext<T>),
    Plain(T),
}

fn bad(msg: impl Into<String>) -> solana_rpc_client_api::client_error::Error {
    ErrorKind::Custom(msg.into()).into()
}

fn to_raw(ui: UiAccount) -> ClientResult<RawAccount> {
    if ui.data.1 != "base64" {
        return Err(bad(format!("unexpected account encoding {}", ui.data.1)));
    }
    let data = base64::engine::general_purpose::STANDARD
        .decode(ui.data.0.as_bytes())
        .map_err(|e| bad(format!("account data is not base64: {e}")))?;
    let owner = ui
        .owner
        .parse()
        .map_err(|_| bad("account owner is not a pubkey"))?;
    Ok(RawAccount {
        owner,
        lamports: ui.lamports,
        data,
    })
}

pub async fn get_slot(client: &RpcClient) -> ClientResult<u64> {
    client
        .send(RpcRequest::GetSlot, json!([{ "commitment": "confirmed" }]))
        .await
}

/// Reads `keys` in calls of at most 100; each read carries its call's slot.
pub async fn get_accounts(client: &RpcClient, keys: &[Pubkey]) -> ClientResult<Vec<AccountRead>> {
    let mut reads = Vec::with_capacity(keys.len());
    for chunk in keys.chunks(MAX_ACCOUNTS_PER_CALL) {
        let keys: Vec<String> = chunk.iter().map(|k| k.to_string()).collect();
        let params = json!([keys, { "encoding": "base64", "commitment": "confirmed" }]);
        let answer: WithContext<Vec<Option<UiAccount>>> =
            client.send(RpcRequest::GetMultipleAccounts, params).await?;
        if answer.value.len() != chunk.len() {
            return Err(bad(
                "getMultipleAccounts answered the wrong number of accounts",
            ));
        }
        for account in answer.value {
            let account = account.map(to_raw).transpose()?;
            reads.push(AccountRead {
                slot: answer.context.slot,
                account,
            });
        }
    }
    Ok(reads)
}

/// A getProgramAccounts filter.
pub enum Filter<'a> {
    DataSize(usize),
    Memcmp { offset: usize, bytes: &'a [u8] },
}

impl Filter<'_> {
    fn to_json(&self) -> Value {
        match self {
            Filter::DataSize(size) => json!({ "dataSize": size }),
            Filter::Memcmp { offset, bytes } => json!({
                "memcmp": { "offset": offset, "bytes": bs58::encode(bytes).into_string(), "encoding": "base58" }
            }),
        }
    }
}

/// All accounts of `program` matching `filters`, and the slot they were read at
/// (0 when the server gave no context).
pub async fn get_program_accounts(
    client: &RpcClient,
    program: &Pubkey,
    filters: &[Filter<'_>],
) -> ClientResult<(u64, Vec<(Pubkey, RawAccount)>)> {
    let filters: Vec<Value> = filters.iter().map(Filter::to_json).collect();
    let params = json!([program.to_string(), {
        "encoding": "base64", "commitment": "confirmed", "withContext": true, "filters": filters
    }]);
    let answer: MaybeContext<Vec<KeyedAccount>> =
        client.send(RpcRequest::GetProgramAccounts, params).await?;
    let (slot, keyed) = match answer {
        MaybeContext::Context(c) => (c.context.slot, c.value),
        MaybeContext::Plain(v) => (0, v),
    };
    let mut accounts = Vec::with_capacity(keyed.len());
    for k in keyed {
        let key = k
            .pubkey
            .parse()
            .map_err(|_| bad("account key is not a pubkey"))?;
        accounts.push((key, to_raw(k.account)?));
    }
    Ok((slot, accounts))
}

#[derive(Deserialize)]
struct SignatureInfo {
    signature: String,
}

/// The signature of the transaction that created `address`: the oldest of
/// its signatures, when all of them fit in one page of `page` (otherwise the
/// oldest is not known from one call, and `None` is answered).
pub async fn first_signature(
    client: &RpcClient,
    address: &Pubkey,
    page: usize,
) -> ClientResult<Option<String>> {
    let params = json!([address.to_string(), { "limit": page, "commitment": "confirmed" }]);
    let signatures: Vec<SignatureInfo> = client
        .send(RpcRequest::GetSignaturesForAddress, params)
        .await?;
    Ok((signatures.len() < page)
        .then(|| signatures.into_iter().last().map(|s| s.signature))
        .flatten())
}

/// surfpool's `surfnet_setAccount`: creates or overwrites an account at once.
/// Only for the local chain (demo seeding and tests), never called by the server.
pub async fn surfnet_set_account(
    client: &RpcClient,
    key: &Pubkey,
    owner: &Pubkey,
    lamports: u64,
    data: &[u8],
) -> ClientResult<()> {
    let params = json!([key.to_string(), {
        "lamports": lamports, "owner": owner.to_string(), "data": hex::encode(data), "executable": false
    }]);
    let _: Value = client
        .send(
            RpcRequest::Custom {
                method: "surfnet_setAccount",
            },
            params,
        )
        .await?;
    Ok(())
}

/// surfpool's `surfnet_resetAccount`: removes an account set by `surfnet_setAccount`.
pub async fn surfnet_reset_account(client: &RpcClient, key: &Pubkey) -> ClientResult<()> {
    let _: Value = client
        .send(
            RpcRequest::Custom {
                method: "surfnet_resetAccount",
            },
            json!([key.to_string()]),
        )
        .await?;
    Ok(())
}
