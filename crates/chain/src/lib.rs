//! The chain at the edge: a rate-limited JSON-RPC transport under the Solana RPC
//! client, the typed reads the service makes, and the live sources of account
//! updates (the RPC websocket, Yellowstone gRPC). Nothing here knows which
//! cluster it talks to: the same code reads surfpool, devnet or mainnet.

pub mod grpc;
pub mod metrics;
pub mod rpc;
mod sender;
pub mod settings;
pub mod source;
pub mod websocket;
mod websocket_feeds;

pub use settings::{ChainSource, RpcConfig};
