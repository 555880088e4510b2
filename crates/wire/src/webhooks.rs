//! Webhooks as the API shows them (docs/design.md §18): the webhook, its
//! deliveries, and the bodies of the signed calls that manage them.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::formats::{
    DeliveryIdText, DeliveryStatusName, NonceText, PubkeyText, WadText, WalletSignature,
    WebhookIdText, WebhookLine, WebhookStatusName, WebhookUrl,
};

/// A webhook as stored; its secret is shown once, at creation.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Webhook {
    #[schema(value_type = WebhookIdText)]
    pub id: String,
    pub url: String,
    /// Owners whose account health factor crosses this line are announced.
    #[schema(value_type = WadText)]
    pub below_wad: String,
    /// The owners followed; null: every owner.
    #[schema(value_type = Option<Vec<PubkeyText>>)]
    pub owners: Option<Vec<String>>,
    /// Owners holding a position in any of these pools; null: any pool.
    #[schema(value_type = Option<Vec<PubkeyText>>)]
    pub pools: Option<Vec<String>>,
    pub description: Option<String>,
    /// `active` or `disabled`.
    #[schema(value_type = WebhookStatusName)]
    pub status: String,
    #[schema(value_type = PubkeyText)]
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    /// Why it was disabled (410 Gone, retries exhausted); null while active.
    pub disabled_reason: Option<String>,
}

/// The answer to a create: the webhook and its signing secret, never shown
/// again.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CreatedWebhook {
    #[serde(flatten)]
    pub webhook: Webhook,
    /// `whsec_` and the base64 of 32 random bytes (Standard Webhooks).
    pub secret: String,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WebhooksResponse {
    pub webhooks: Vec<Webhook>,
}

/// One delivery: one change's events for one webhook.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Delivery {
    /// The `webhook-id` header of every attempt.
    #[schema(value_type = DeliveryIdText)]
    pub delivery_id: String,
    /// `<epoch>.<tick>` of the change that caused it.
    pub change_id: String,
    /// `pending`, `delivered` or `failed`.
    #[schema(value_type = DeliveryStatusName)]
    pub status: String,
    pub attempts: i32,
    /// The receiver's last HTTP status; null when none answered.
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
    #[schema(value_type = Vec<Object>)]
    pub events: serde_json::Value,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DeliveriesResponse {
    pub deliveries: Vec<Delivery>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AcceptedResponse {
    pub accepted: bool,
}

/// The body of POST /api/webhooks; its `parse` (http::handlers::webhooks)
/// reads it into a typed call.
#[derive(ToSchema)]
pub struct CreateWebhookRequest {
    #[schema(value_type = PubkeyText)]
    pub actor: String,
    #[schema(value_type = NonceText)]
    pub nonce: String,
    /// Base58 ed25519 signature of the message for `create_webhook`.
    #[schema(value_type = WalletSignature)]
    pub signature: String,
    #[schema(value_type = WebhookUrl)]
    pub url: String,
    /// Default 1 WAD (under water).
    #[schema(value_type = Option<WebhookLine>)]
    pub below_wad: Option<String>,
    /// 1 to 10,000 wallets; absent: every owner.
    #[schema(value_type = Option<Vec<PubkeyText>>, min_items = 1, max_items = 10000)]
    pub owners: Option<Vec<String>>,
    /// 1 to 1,000 pools; absent: any pool.
    #[schema(value_type = Option<Vec<PubkeyText>>, min_items = 1, max_items = 1000)]
    pub pools: Option<Vec<String>>,
    #[schema(max_length = 256)]
    pub description: Option<String>,
}

/// The body of DELETE /api/webhooks/{id}.
#[derive(ToSchema)]
pub struct DeleteWebhookRequest {
    #[schema(value_type = PubkeyText)]
    pub actor: String,
    #[schema(value_type = NonceText)]
    pub nonce: String,
    /// Base58 ed25519 signature of the message for `delete_webhook:<id>`.
    #[schema(value_type = WalletSignature)]
    pub signature: String,
}

/// The body of POST /api/webhooks/{id}/redeliver.
#[derive(ToSchema)]
pub struct RedeliverRequest {
    #[schema(value_type = PubkeyText)]
    pub actor: String,
    #[schema(value_type = NonceText)]
    pub nonce: String,
    /// Base58 ed25519 signature of the message for
    /// `redeliver_webhook:<id>:<delivery_id>`.
    #[schema(value_type = WalletSignature)]
    pub signature: String,
    #[schema(value_type = DeliveryIdText)]
    pub delivery_id: String,
}
