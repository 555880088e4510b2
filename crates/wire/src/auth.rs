//! The handshake's first step (docs/design.md §4.1).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::formats::{ActionText, PubkeyText};

/// The body of POST /api/auth/nonce; its `parse` (http::handlers::auth) reads it
/// into a typed call.
#[derive(ToSchema)]
pub struct NonceRequest {
    /// Base58 wallet the nonce is issued to.
    #[schema(value_type = PubkeyText)]
    pub pubkey: String,
    /// The operation it is for, e.g. `add_admin:<pubkey>:<role>` (1-256 printable ASCII).
    #[schema(value_type = ActionText)]
    pub action: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct NonceResponse {
    /// 32 hexadecimal characters.
    pub nonce: String,
    /// The canonical text to sign: `Service admin auth\nAction: <action>\nNonce: <nonce>`.
    pub message: String,
    #[serde(rename = "expiresAt")]
    pub expires_at: String,
}
