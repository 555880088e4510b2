//! The allowlist and the audit log as the API and the operator read them
//! (docs/design.md §4.4, §4.6, §9).

use chrono::{DateTime, Utc};
use tokio_postgres::types::ToSql;

use lendex_domain::enums::Role;
use lendex_wire::admin::{Admin, AuditEntry};

use crate::error::DbResult;
use crate::handle::Store;
use crate::{queries, rows};

/// A wallet's role if it is an active (not revoked) admin.
pub async fn active_role(store: &Store, pubkey: &str) -> DbResult<Option<Role>> {
    let session = store.session().await?;
    let client = session.client();
    let stmt = client.prepare_cached(queries::ACTIVE_ADMIN_ROLE).await?;
    let row = client.query_opt(&stmt, &[&pubkey]).await?;
    Ok(row.and_then(|r| Role::parse(r.get::<_, &str>(0))))
}

/// The active admins, oldest first (GET /api/admin/allowlist).
pub async fn active(store: &Store) -> DbResult<Vec<Admin>> {
    read_admins(store, queries::LIST_ACTIVE_ADMINS).await
}

/// Every admin row, revoked ones included, oldest first (`lendex admin list`).
pub async fn all(store: &Store) -> DbResult<Vec<Admin>> {
    read_admins(store, queries::LIST_ALL_ADMINS).await
}

async fn read_admins(store: &Store, statement: &str) -> DbResult<Vec<Admin>> {
    let session = store.session().await?;
    let client = session.client();
    let stmt = client.prepare_cached(statement).await?;
    client
        .query(&stmt, &[])
        .await?
        .iter()
        .map(rows::admin)
        .collect()
}

/// Which audit entries: newest first, ids below `before`, created in
/// [from, to), at most `limit`, of an actor or an action when given.
#[derive(Debug, Clone, Copy)]
pub struct AuditFilter<'a> {
    pub limit: i64,
    pub before: i64,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub actor: Option<&'a str>,
    pub action: Option<&'a str>,
}

pub async fn audit(store: &Store, f: AuditFilter<'_>) -> DbResult<Vec<AuditEntry>> {
    let window: [&(dyn ToSql + Sync); 4] = [&f.limit, &f.before, &f.from, &f.to];
    let (statement, filters): (&str, Vec<&str>) = match (f.actor, f.action) {
        (None, None) => (queries::AUDIT_LIST, vec![]),
        (Some(actor), None) => (queries::AUDIT_LIST_BY_ACTOR, vec![actor]),
        (None, Some(action)) => (queries::AUDIT_LIST_BY_ACTION, vec![action]),
        (Some(actor), Some(action)) => (queries::AUDIT_LIST_BY_ACTOR_ACTION, vec![actor, action]),
    };
    let mut all: Vec<&(dyn ToSql + Sync)> = window.to_vec();
    all.extend(filters.iter().map(|f| f as &(dyn ToSql + Sync)));
    let session = store.session().await?;
    let client = session.client();
    let stmt = client.prepare_cached(statement).await?;
    let rows = client.query(&stmt, &all).await?;
    Ok(rows.iter().map(rows::audit_entry).collect())
}
