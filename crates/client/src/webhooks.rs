//! Webhooks through the handshake (docs/design.md §18): create (the secret
//! is in the answer, and nowhere after), list, read deliveries, delete,
//! redeliver. Each call signs its own action.

use lendex_domain::auth_message::{
    CREATE_WEBHOOK_ACTION, READ_WEBHOOKS_ACTION, delete_webhook_action, redeliver_webhook_action,
};
use lendex_wire::webhooks::{
    AcceptedResponse, CreatedWebhook, DeliveriesResponse, Webhook, WebhooksResponse,
};
use serde_json::json;

use crate::{Client, Error, Signer};

/// What a new webhook is: its URL, and optionally its line (a WAD as a
/// decimal string; default 1 WAD), the owners and pools it follows and a
/// description.
#[derive(Debug, Clone, Default)]
pub struct NewWebhook {
    pub url: String,
    pub below_wad: Option<String>,
    pub owners: Option<Vec<String>>,
    pub pools: Option<Vec<String>>,
    pub description: Option<String>,
}

impl Client {
    /// POST /api/webhooks. Keep the answer's `secret`: it is shown once.
    pub async fn create_webhook(
        &self,
        signer: &Signer,
        webhook: &NewWebhook,
    ) -> Result<CreatedWebhook, Error> {
        let signed = self.sign(signer, CREATE_WEBHOOK_ACTION).await?;
        let body = signed.body(json!({
            "url": webhook.url, "below_wad": webhook.below_wad, "owners": webhook.owners,
            "pools": webhook.pools, "description": webhook.description,
        }));
        self.send_json(reqwest::Method::POST, "/api/webhooks", &body)
            .await
    }

    /// GET /api/webhooks: the ones the signer may see.
    pub async fn webhooks(&self, signer: &Signer) -> Result<WebhooksResponse, Error> {
        self.signed_get(signer, READ_WEBHOOKS_ACTION, "/api/webhooks")
            .await
    }

    /// GET /api/webhooks/{id}/deliveries: the newest `limit`, newest first.
    pub async fn webhook_deliveries(
        &self,
        signer: &Signer,
        id: &str,
        limit: Option<u32>,
    ) -> Result<DeliveriesResponse, Error> {
        let query = limit.map_or(String::new(), |l| format!("?limit={l}"));
        let path = format!("/api/webhooks/{id}/deliveries{query}");
        self.signed_get(signer, READ_WEBHOOKS_ACTION, &path).await
    }

    /// DELETE /api/webhooks/{id}: the webhook as it was.
    pub async fn delete_webhook(&self, signer: &Signer, id: &str) -> Result<Webhook, Error> {
        let signed = self.sign(signer, &delete_webhook_action(id)).await?;
        let path = format!("/api/webhooks/{id}");
        self.send_json(reqwest::Method::DELETE, &path, &signed.body(json!({})))
            .await
    }

    /// POST /api/webhooks/{id}/redeliver: sent again with its id, after
    /// those queued.
    pub async fn redeliver_webhook(
        &self,
        signer: &Signer,
        id: &str,
        delivery_id: &str,
    ) -> Result<AcceptedResponse, Error> {
        let signed = self
            .sign(signer, &redeliver_webhook_action(id, delivery_id))
            .await?;
        let path = format!("/api/webhooks/{id}/redeliver");
        let body = signed.body(json!({ "delivery_id": delivery_id }));
        self.send_json(reqwest::Method::POST, &path, &body).await
    }
}
