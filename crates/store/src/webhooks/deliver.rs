//! The deliverer's queue (docs/design.md §18): which delivery each webhook
//! sends next, and what an attempt leaves behind. Each outcome is one
//! transaction, conditional on the delivery still pending, so a repeat by a
//! replica that lost the lease late changes nothing twice.

use chrono::{DateTime, Utc};
use deadpool_postgres::Pool;

use crate::error::DbResult;
use crate::queries;

/// A delivery due now: the first pending one of its webhook.
#[derive(Debug, Clone)]
pub struct Due {
    pub delivery_id: String,
    pub webhook_id: String,
    pub change_id: String,
    pub events: serde_json::Value,
    /// Attempts made so far (of this round).
    pub attempts: i32,
    /// When this round's first attempt was made (none yet: `None`).
    pub first_attempt_at: Option<DateTime<Utc>>,
    pub url: String,
    pub secret: String,
}

/// Up to `limit` deliveries due now, one per webhook.
pub async fn due(pool: &Pool, cluster: &str, limit: i64) -> DbResult<Vec<Due>> {
    let client = pool.get().await?;
    let stmt = client.prepare_cached(queries::DUE_DELIVERIES).await?;
    let rows = client.query(&stmt, &[&cluster, &limit]).await?;
    Ok(rows
        .iter()
        .map(|r| Due {
            delivery_id: r.get("delivery_id"),
            webhook_id: r.get("webhook_id"),
            change_id: r.get("change_id"),
            events: r.get("events"),
            attempts: r.get("attempts"),
            first_attempt_at: r.get("first_attempt_at"),
            url: r.get("url"),
            secret: r.get("secret"),
        })
        .collect())
}

/// What an attempt leaves.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Answered 2xx with this status.
    Delivered(i32),
    /// Failed; tried again at `next`, the round having begun at `began`.
    Retry {
        status: Option<i32>,
        error: String,
        began: DateTime<Utc>,
        next: DateTime<Utc>,
    },
    /// Failed for good: the delivery fails, its webhook is disabled for
    /// `reason`, and its other pending deliveries fail with it.
    Disable {
        status: Option<i32>,
        error: String,
        reason: String,
    },
}

/// Stores `outcome` for `delivery_id`; for a delivery, when its change
/// committed (`None`: someone else stored an outcome first).
pub async fn record(
    pool: &Pool,
    delivery_id: &str,
    outcome: &Outcome,
) -> DbResult<Option<DateTime<Utc>>> {
    let mut client = pool.get().await?;
    match outcome {
        Outcome::Delivered(status) => {
            let stmt = client.prepare_cached(queries::DELIVERED).await?;
            let row = client.query_opt(&stmt, &[&delivery_id, status]).await?;
            Ok(row.map(|r| r.get(0)))
        }
        Outcome::Retry {
            status,
            error,
            began,
            next,
        } => {
            let stmt = client.prepare_cached(queries::RETRY_LATER).await?;
            client
                .execute(&stmt, &[&delivery_id, status, error, began, next])
                .await?;
            Ok(None)
        }
        Outcome::Disable {
            status,
            error,
            reason,
        } => {
            let tx = client.transaction().await?;
            let failed = tx
                .query_opt(queries::FAIL_DELIVERY, &[&delivery_id, status, error])
                .await?;
            if let Some(row) = failed {
                let webhook: String = row.get(0);
                tx.execute(queries::DISABLE_WEBHOOK, &[&webhook, reason])
                    .await?;
                let because = format!("webhook disabled: {reason}");
                tx.execute(queries::FAIL_PENDING, &[&webhook, &because])
                    .await?;
            }
            tx.commit().await?;
            Ok(None)
        }
    }
}

/// `checks.webhooks`' counts: active and disabled webhooks, pending
/// deliveries of active ones, and when the oldest of those committed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Backlog {
    pub active: i64,
    pub disabled: i64,
    pub pending: i64,
    pub oldest_committed_at: Option<DateTime<Utc>>,
}

pub async fn backlog(pool: &Pool, cluster: &str) -> DbResult<Backlog> {
    let client = pool.get().await?;
    let stmt = client.prepare_cached(queries::WEBHOOKS_STATUS).await?;
    let row = client.query_one(&stmt, &[&cluster]).await?;
    Ok(Backlog {
        active: row.get(0),
        disabled: row.get(1),
        pending: row.get(2),
        oldest_committed_at: row.get(3),
    })
}
