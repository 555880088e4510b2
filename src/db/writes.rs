//! The writes the service makes, each a command applied inside a transaction that
//! the caller (the database-writer actor, or the operator CLI) commits. A command
//! that writes an admin change also writes its audit entry, in the same
//! transaction, so the two can never disagree.

use deadpool_postgres::Transaction;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use super::queries;
use crate::error::{ApiError, ApiResult};

/// One write. `apply` runs its statements; the caller commits.
pub trait WriteCommand: Send + 'static {
    type Output: Send + 'static;
    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, ApiResult<Self::Output>>;
}

/// POST /api/transactions: insert, or update status and error_msg of the same signature.
#[derive(Debug, Clone)]
pub struct RecordTransaction {
    pub cluster: &'static str,
    pub signature: String,
    pub pool_address: Option<String>,
    pub wallet: String,
    pub action: String,
    pub amount: Option<String>,
    pub status: String,
    pub error_msg: Option<String>,
}

impl WriteCommand for RecordTransaction {
    type Output = i64;
    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, ApiResult<i64>> {
        Box::pin(async move {
            let stmt = tx.prepare_cached(queries::UPSERT_TX).await?;
            let row = tx
                .query_one(
                    &stmt,
                    &[
                        &self.cluster,
                        &self.signature,
                        &self.pool_address,
                        &self.wallet,
                        &self.action,
                        &self.amount,
                        &self.status,
                        &self.error_msg,
                    ],
                )
                .await?;
            Ok(row.get(0))
        })
    }
}

/// Adds an admin, or re-activates and updates an existing row; audited as add_admin.
#[derive(Debug, Clone)]
pub struct AddAdmin {
    pub pubkey: String,
    pub role: String,
    pub label: Option<String>,
    /// The adding admin's pubkey, or `system` for the operator CLI.
    pub actor: String,
}

impl WriteCommand for AddAdmin {
    type Output = ();
    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, ApiResult<()>> {
        Box::pin(async move {
            tx.execute(
                queries::UPSERT_ADMIN,
                &[&self.pubkey, &self.role, &self.label, &self.actor],
            )
            .await?;
            let details = json!({ "role": self.role, "label": self.label });
            insert_audit(tx, &self.actor, "add_admin", &self.pubkey, &details).await
        })
    }
}

/// Soft-revokes an active admin; audited as revoke_admin. `false` when there was no
/// active entry (nothing is written then).
#[derive(Debug, Clone)]
pub struct RevokeAdmin {
    pub pubkey: String,
    pub actor: String,
}

impl WriteCommand for RevokeAdmin {
    type Output = bool;
    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, ApiResult<bool>> {
        Box::pin(async move {
            let revoked = tx
                .query_opt(queries::REVOKE_ADMIN, &[&self.pubkey])
                .await?
                .is_some();
            if revoked {
                insert_audit(tx, &self.actor, "revoke_admin", &self.pubkey, &json!({})).await?;
            }
            Ok(revoked)
        })
    }
}

/// An audit entry on its own.
#[derive(Debug, Clone)]
pub struct WriteAudit {
    pub actor: String,
    pub action: String,
    pub target: String,
    pub details: Value,
}

impl WriteCommand for WriteAudit {
    type Output = ();
    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, ApiResult<()>> {
        Box::pin(insert_audit(
            tx,
            &self.actor,
            &self.action,
            &self.target,
            &self.details,
        ))
    }
}

/// The one place audit rows are written (admin writes, pool registration, the
/// operator CLI, and the bootstrap of the migration step).
pub(crate) async fn insert_audit(
    tx: &Transaction<'_>,
    actor: &str,
    action: &str,
    target: &str,
    details: &Value,
) -> ApiResult<()> {
    if !details.is_object() {
        return Err(ApiError::Internal);
    }
    let stmt = tx.prepare_cached(queries::INSERT_AUDIT).await?;
    tx.execute(&stmt, &[&actor, &action, &target, details])
        .await?;
    Ok(())
}

/// Runs one command in its own transaction and commits it (the operator CLI's path;
/// the server goes through the database-writer actor).
pub async fn apply_now<C: WriteCommand>(
    pool: &deadpool_postgres::Pool,
    cmd: &C,
) -> ApiResult<C::Output> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    let out = cmd.apply(&tx).await?;
    tx.commit().await?;
    Ok(out)
}
