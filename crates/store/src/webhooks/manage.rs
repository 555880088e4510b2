//! The signed calls' writes, each with its audit entry in the same
//! transaction, and the reads of the management routes.

use deadpool_postgres::Transaction;
use futures_util::future::BoxFuture;
use serde_json::json;
use tokio_postgres::Row;

use lendex_wire::webhooks::{Delivery, Webhook};

use crate::error::DbResult;
use crate::handle::Store;
use crate::queries;
use crate::writes::{Lane, WriteCommand, insert_audit};

/// A webhook to create (POST /api/webhooks), checked by the caller.
#[derive(Debug, Clone)]
pub struct CreateWebhook {
    pub cluster: &'static str,
    pub id: String,
    pub url: String,
    pub below_wad: u128,
    pub owners: Option<Vec<String>>,
    pub pools: Option<Vec<String>>,
    pub description: Option<String>,
    /// The `whsec_` text.
    pub secret: String,
    pub actor: String,
    /// `webhooks.max`.
    pub max: usize,
}

/// What a create did.
#[derive(Debug, Clone)]
pub enum Created {
    Webhook(Box<Webhook>),
    /// `webhooks.max` are registered already: nothing was stored.
    Full,
}

impl WriteCommand for CreateWebhook {
    type Output = Created;
    const LANE: Lane = Lane::Admin;
    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<Created>> {
        Box::pin(async move {
            tx.batch_execute(queries::LOCK_WEBHOOKS).await?;
            let count: i64 = tx
                .query_one(queries::COUNT_WEBHOOKS, &[&self.cluster])
                .await?
                .get(0);
            if usize::try_from(count).unwrap_or(usize::MAX) >= self.max {
                return Ok(Created::Full);
            }
            let row = tx
                .query_one(
                    queries::INSERT_WEBHOOK,
                    &[
                        &self.id,
                        &self.cluster,
                        &self.url,
                        &self.below_wad.to_string(),
                        &self.owners,
                        &self.pools,
                        &self.description,
                        &self.secret,
                        &self.actor,
                    ],
                )
                .await?;
            let details = json!({
                "url": self.url,
                "below_wad": self.below_wad.to_string(),
                "owners": self.owners.as_ref().map(Vec::len),
                "pools": self.pools,
            });
            insert_audit(tx, &self.actor, "create_webhook", &self.id, &details).await?;
            Ok(Created::Webhook(Box::new(webhook(&row))))
        })
    }
}

/// Deletes a webhook and its deliveries; the webhook as it was, or `None`
/// when there is none the actor may delete (nothing is written then).
#[derive(Debug, Clone)]
pub struct DeleteWebhook {
    pub cluster: &'static str,
    pub id: String,
    pub actor: String,
    /// A pool_admin deletes only the webhooks it created.
    pub creator: Option<String>,
}

impl WriteCommand for DeleteWebhook {
    type Output = Option<Webhook>;
    const LANE: Lane = Lane::Admin;
    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<Option<Webhook>>> {
        Box::pin(async move {
            let Some(row) = tx
                .query_opt(
                    queries::DELETE_WEBHOOK,
                    &[&self.cluster, &self.id, &self.creator],
                )
                .await?
            else {
                return Ok(None);
            };
            let deleted = webhook(&row);
            let details = json!({ "url": deleted.url, "created_by": deleted.created_by });
            insert_audit(tx, &self.actor, "delete_webhook", &self.id, &details).await?;
            Ok(Some(deleted))
        })
    }
}

/// Queues a delivery again with its id; `false` when the actor has no such
/// delivery (nothing is written then).
#[derive(Debug, Clone)]
pub struct Redeliver {
    pub cluster: &'static str,
    pub webhook_id: String,
    pub delivery_id: String,
    pub actor: String,
    pub creator: Option<String>,
}

impl WriteCommand for Redeliver {
    type Output = bool;
    const LANE: Lane = Lane::Admin;
    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<bool>> {
        Box::pin(async move {
            let queued = tx
                .query_opt(
                    queries::REDELIVER,
                    &[
                        &self.cluster,
                        &self.webhook_id,
                        &self.delivery_id,
                        &self.creator,
                    ],
                )
                .await?
                .is_some();
            if queued {
                let details = json!({ "delivery_id": self.delivery_id });
                insert_audit(
                    tx,
                    &self.actor,
                    "redeliver_webhook",
                    &self.webhook_id,
                    &details,
                )
                .await?;
            }
            Ok(queued)
        })
    }
}

/// The webhooks of `cluster`, oldest first; of `creator` alone when given.
pub async fn list(store: &Store, cluster: &str, creator: Option<&str>) -> DbResult<Vec<Webhook>> {
    let session = store.session().await?;
    let client = session.client();
    let stmt = client.prepare_cached(queries::LIST_WEBHOOKS).await?;
    let rows = client.query(&stmt, &[&cluster, &creator]).await?;
    Ok(rows.iter().map(webhook).collect())
}

/// A webhook's newest `limit` deliveries, newest first; `None` when there is
/// no such webhook the creator (when given) made.
pub async fn deliveries(
    store: &Store,
    cluster: &str,
    id: &str,
    creator: Option<&str>,
    limit: i64,
) -> DbResult<Option<Vec<Delivery>>> {
    let session = store.session().await?;
    let client = session.client();
    let visible = client.prepare_cached(queries::WEBHOOK_VISIBLE).await?;
    if client
        .query_opt(&visible, &[&cluster, &id, &creator])
        .await?
        .is_none()
    {
        return Ok(None);
    }
    let stmt = client.prepare_cached(queries::LIST_DELIVERIES).await?;
    let rows = client
        .query(&stmt, &[&cluster, &id, &limit, &creator])
        .await?;
    Ok(Some(rows.iter().map(delivery).collect()))
}

fn webhook(row: &Row) -> Webhook {
    Webhook {
        id: row.get("id"),
        url: row.get("url"),
        below_wad: row.get("below_wad"),
        owners: row.get("owners"),
        pools: row.get("pools"),
        description: row.get("description"),
        status: row.get("status"),
        created_by: row.get("created_by"),
        created_at: row.get("created_at"),
        disabled_reason: row.get("disabled_reason"),
    }
}

fn delivery(row: &Row) -> Delivery {
    Delivery {
        delivery_id: row.get("delivery_id"),
        change_id: row.get("change_id"),
        status: row.get("status"),
        attempts: row.get("attempts"),
        last_status: row.get("last_status"),
        last_error: row.get("last_error"),
        events: row.get("events"),
    }
}
