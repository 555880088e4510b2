//! The chain at the edge: a rate-limited JSON-RPC transport under the Solana RPC
//! client, and the typed reads the service makes. Nothing here knows which
//! cluster it talks to: the same code reads surfpool, devnet or mainnet.

pub mod rpc;
pub mod sender;
pub mod stream;
