//! `lendex remote` for webhooks (docs/webhooks.md): each command one signed
//! call through the typed client, its answer printed as JSON.

use lendex_client::{Client, NewWebhook, Signer};

use super::{Failure, json};

/// One webhook command.
pub enum WebhookCall {
    Create(NewWebhook),
    List,
    Deliveries { id: String, limit: Option<u32> },
    Delete { id: String },
    Redeliver { id: String, delivery_id: String },
}

pub async fn run(client: &Client, signer: &Signer, call: WebhookCall) -> Result<String, Failure> {
    Ok(match call {
        WebhookCall::Create(webhook) => json(&client.create_webhook(signer, &webhook).await?),
        WebhookCall::List => json(&client.webhooks(signer).await?),
        WebhookCall::Deliveries { id, limit } => {
            json(&client.webhook_deliveries(signer, &id, limit).await?)
        }
        WebhookCall::Delete { id } => json(&client.delete_webhook(signer, &id).await?),
        WebhookCall::Redeliver { id, delivery_id } => {
            json(&client.redeliver_webhook(signer, &id, &delivery_id).await?)
        }
    })
}
