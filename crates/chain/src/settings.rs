//! The `[rpc]` settings: where the chain is read and how hard (config.toml;
//! the service's `config` module loads them with the rest).

use lendex_domain::forks::Commitment;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RpcConfig {
    pub url: String,
    /// The RPC websocket (short env: WS_URL); empty: derived from `url`.
    pub ws_url: String,
    /// A live source (websocket or gRPC stream) silent this long is dropped
    /// and reconnected.
    pub ws_silence_ms: u64,
    /// Where live account updates come from (docs/design.md §14).
    pub source: ChainSource,
    /// The Yellowstone gRPC endpoint (short env: GRPC_URL), for `source = "grpc"`.
    pub grpc_url: String,
    /// Sent as the `x-token` header (short env: GRPC_X_TOKEN); empty: none.
    pub grpc_x_token: String,
    /// What the gRPC source reads at (docs/design.md §15): `confirmed`, or
    /// `processed` with the slot tree and the second view.
    pub commitment: Commitment,
    /// The open slots the slot tree keeps at `processed`.
    pub max_unconfirmed_slots: usize,
    pub timeout_ms: u64,
    pub max_rps: u32,
    pub max_concurrency: usize,
    /// Longest wait at the (fair) rate limit; a request that would wait longer fails at once.
    pub max_queue_ms: u64,
}

/// The live source of account updates: the RPC node's websocket, or a
/// Yellowstone gRPC (Geyser) endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChainSource {
    Websocket,
    Grpc,
}

impl ChainSource {
    pub fn as_str(self) -> &'static str {
        match self {
            ChainSource::Websocket => "websocket",
            ChainSource::Grpc => "grpc",
        }
    }
}
