//! The admin allowlist and the audit log (docs/design.md §16.6, 2.7, 4.2 to 4.6).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::formats::{NonceText, PubkeyText, RoleName, WalletSignature};
use lendex_domain::enums::Role;

/// docs/design.md §16.6.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Admin {
    #[schema(value_type = PubkeyText)]
    pub pubkey: String,
    #[schema(value_type = RoleName)]
    pub role: Role,
    pub label: Option<String>,
    pub added_by: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// docs/design.md §16.7.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AuditEntry {
    pub id: i64,
    pub actor: String,
    pub action: String,
    pub target: String,
    #[schema(value_type = Object)]
    pub details: serde_json::Value,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct MeResponse {
    /// `super_admin`, `pool_admin`, or null when the wallet is not an active admin.
    #[schema(value_type = Option<RoleName>)]
    pub role: Option<Role>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AllowlistResponse {
    pub admins: Vec<Admin>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct OkResponse {
    pub ok: bool,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AuditResponse {
    pub entries: Vec<AuditEntry>,
}

/// The body of POST /api/admin/allowlist; its `parse` (http::handlers::admin) reads it
/// into a typed call.
#[derive(ToSchema)]
pub struct AddAdminRequest {
    #[schema(value_type = PubkeyText)]
    pub actor: String,
    #[schema(value_type = NonceText)]
    pub nonce: String,
    /// Base58 ed25519 signature of the message for `add_admin:<pubkey>:<role>`.
    #[schema(value_type = WalletSignature)]
    pub signature: String,
    #[schema(value_type = PubkeyText)]
    pub pubkey: String,
    /// `pool_admin` or `super_admin`.
    #[schema(value_type = RoleName)]
    pub role: String,
    #[schema(max_length = 256)]
    pub label: Option<String>,
}

/// The body of DELETE /api/admin/allowlist; its `parse` (http::handlers::admin) reads it
/// into a typed call.
#[derive(ToSchema)]
pub struct RevokeAdminRequest {
    #[schema(value_type = PubkeyText)]
    pub actor: String,
    #[schema(value_type = NonceText)]
    pub nonce: String,
    /// Base58 ed25519 signature of the message for `revoke_admin:<pubkey>`.
    #[schema(value_type = WalletSignature)]
    pub signature: String,
    #[schema(value_type = PubkeyText)]
    pub pubkey: String,
}
