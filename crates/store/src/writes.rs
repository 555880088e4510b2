//! The writes the service makes, each a command applied inside a transaction that
//! the caller (the database-writer actor, or the operator CLI) commits. A command
//! that writes an admin change also writes its audit entry, in the same
//! transaction, so the two can never disagree.

use deadpool_postgres::Transaction;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use super::queries;
use crate::error::{DbError, DbResult};
use lendex_domain::enums::Role;

/// The writer lanes: each concern has its own queue and connection, so a stall
/// on one table (a lock held elsewhere) never holds up writes to the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// Pools, positions and health factors: chain syncs and the health engine.
    Index,
    /// The allowlist, the audit log and pool registration: signed operator calls.
    Admin,
    /// The transaction log: dApp traffic.
    TxLog,
    /// Handshake nonces, issued and spent (db::nonces): authentication steps,
    /// never queued behind the writes they gate.
    Auth,
}

impl Lane {
    pub const ALL: [Lane; 4] = [Lane::Index, Lane::Admin, Lane::TxLog, Lane::Auth];

    /// Whether the writes of one batch may be applied in any order (so all of a
    /// kind go out as one statement): true where none can depend on another
    /// queued with it.
    pub fn commutes(self) -> bool {
        matches!(self, Lane::Auth)
    }

    pub fn name(self) -> &'static str {
        match self {
            Lane::Index => "index",
            Lane::Admin => "admin",
            Lane::TxLog => "tx_log",
            Lane::Auth => "auth",
        }
    }
}

/// One write. `apply` runs its statements; the caller commits.
pub trait WriteCommand: Send + Sync + 'static {
    type Output: Send + 'static;
    /// The lane that applies it.
    const LANE: Lane;
    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<Self::Output>>;

    /// True when `apply_all` writes a whole run in one statement; the writer
    /// then uses it for consecutive writes of this command in a batch.
    const MULTI_ROW: bool = false;

    /// About how many rows it writes: a lane puts no more than
    /// `db_writer`'s row cap in one transaction, so heavy writes queued together
    /// (a reconcile's pools, a health-factor write-back) do not add up to a
    /// batch that cannot finish inside its time share.
    fn rows(&self) -> usize {
        1
    }

    /// Several of this command, outputs in order, as if applied one after the
    /// other. An error aborts the transaction: the writer then applies them one
    /// by one, each in its own savepoint.
    fn apply_all<'a>(
        cmds: Vec<&'a Self>,
        tx: &'a Transaction<'a>,
    ) -> BoxFuture<'a, DbResult<Vec<Self::Output>>> {
        Box::pin(async move {
            let mut out = Vec::with_capacity(cmds.len());
            for cmd in cmds {
                out.push(cmd.apply(tx).await?);
            }
            Ok(out)
        })
    }
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
    const LANE: Lane = Lane::TxLog;
    const MULTI_ROW: bool = true;

    /// One `INSERT ... SELECT FROM UNNEST ... ON CONFLICT` for the whole run.
    /// Writes of one signature are merged first (a statement cannot touch a row
    /// twice): the first one's fields with the last one's status and error_msg,
    /// which is what applying them in arrival order leaves; all get its id.
    fn apply_all<'a>(
        cmds: Vec<&'a Self>,
        tx: &'a Transaction<'a>,
    ) -> BoxFuture<'a, DbResult<Vec<i64>>> {
        Box::pin(async move {
            let cluster = cmds.first().map_or("", |c| c.cluster);
            let merged = first_and_last(&cmds, |c| c.signature.as_str());
            // The inserted fields are the first write's; the updated ones the last's.
            let first = |f: fn(&'a RecordTransaction) -> Option<&'a str>| -> Vec<Option<&'a str>> {
                merged.iter().map(|&(first, _)| f(first)).collect()
            };
            let signatures = first(|c| Some(&c.signature));
            let pools = first(|c| c.pool_address.as_deref());
            let wallets = first(|c| Some(&c.wallet));
            let actions = first(|c| Some(&c.action));
            let amounts = first(|c| c.amount.as_deref());
            let statuses: Vec<&str> = merged
                .iter()
                .map(|(_, last)| last.status.as_str())
                .collect();
            let errors: Vec<Option<&str>> = merged
                .iter()
                .map(|(_, last)| last.error_msg.as_deref())
                .collect();
            let stmt = tx.prepare_cached(queries::UPSERT_TX_MANY).await?;
            let rows = tx
                .query(
                    &stmt,
                    &[
                        &cluster,
                        &signatures,
                        &pools,
                        &wallets,
                        &actions,
                        &amounts,
                        &statuses,
                        &errors,
                    ],
                )
                .await?;
            let mut ids = std::collections::HashMap::with_capacity(rows.len());
            for row in &rows {
                ids.insert(row.get::<_, String>(1), row.get::<_, i64>(0));
            }
            cmds.iter()
                .map(|c| {
                    ids.get(&c.signature)
                        .copied()
                        .ok_or_else(|| DbError::failed("an upserted transaction has no id"))
                })
                .collect()
        })
    }

    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<i64>> {
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

/// The writes of a run grouped by `key`, in order of first arrival: the first
/// and the last write of each key. A multi-row statement may touch a row once,
/// so repeats are merged as applying them in arrival order would leave them.
fn first_and_last<'a, T>(cmds: &[&'a T], key: impl Fn(&'a T) -> &'a str) -> Vec<(&'a T, &'a T)> {
    let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut rows: Vec<(&T, &T)> = Vec::with_capacity(cmds.len());
    for &cmd in cmds {
        match at.get(key(cmd)) {
            Some(&i) => rows[i].1 = cmd,
            None => {
                at.insert(key(cmd), rows.len());
                rows.push((cmd, cmd));
            }
        }
    }
    rows
}

/// Adds an admin, or re-activates and updates an existing row; audited as add_admin.
#[derive(Debug, Clone)]
pub struct AddAdmin {
    pub pubkey: String,
    pub role: Role,
    pub label: Option<String>,
    /// The adding admin's pubkey, or `system` for the operator CLI.
    pub actor: String,
}

impl AddAdmin {
    fn audit_details(&self) -> Value {
        json!({ "role": self.role, "label": self.label })
    }
}

impl WriteCommand for AddAdmin {
    type Output = ();
    const LANE: Lane = Lane::Admin;
    const MULTI_ROW: bool = true;

    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<()>> {
        Box::pin(async move {
            let stmt = tx.prepare_cached(queries::UPSERT_ADMIN).await?;
            tx.execute(
                &stmt,
                &[&self.pubkey, &self.role.as_str(), &self.label, &self.actor],
            )
            .await?;
            insert_audit(
                tx,
                &self.actor,
                "add_admin",
                &self.pubkey,
                &self.audit_details(),
            )
            .await
        })
    }

    /// One upsert for the run (a wallet added twice ends with its last entry,
    /// as in arrival order) and one insert of every audit entry, in order.
    fn apply_all<'a>(
        cmds: Vec<&'a Self>,
        tx: &'a Transaction<'a>,
    ) -> BoxFuture<'a, DbResult<Vec<()>>> {
        Box::pin(async move {
            // A wallet added twice ends with its last entry.
            let rows: Vec<&AddAdmin> = first_and_last(&cmds, |c| c.pubkey.as_str())
                .into_iter()
                .map(|(_, last)| last)
                .collect();
            let column = |f: fn(&'a AddAdmin) -> Option<&'a str>| -> Vec<Option<&'a str>> {
                rows.iter().map(|&r| f(r)).collect()
            };
            let stmt = tx.prepare_cached(queries::UPSERT_ADMINS).await?;
            tx.execute(
                &stmt,
                &[
                    &column(|c| Some(&c.pubkey)),
                    &column(|c| Some(c.role.as_str())),
                    &column(|c| c.label.as_deref()),
                    &column(|c| Some(&c.actor)),
                ],
            )
            .await?;
            let details: Vec<Value> = cmds.iter().map(|c| c.audit_details()).collect();
            let entries: Vec<AuditEntry> = cmds
                .iter()
                .zip(&details)
                .map(|(c, d)| AuditEntry {
                    actor: &c.actor,
                    action: "add_admin",
                    target: &c.pubkey,
                    details: d,
                })
                .collect();
            insert_audits(tx, &entries).await?;
            Ok(vec![(); cmds.len()])
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
    const LANE: Lane = Lane::Admin;
    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<bool>> {
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
    const LANE: Lane = Lane::Admin;
    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<()>> {
        Box::pin(insert_audit(
            tx,
            &self.actor,
            &self.action,
            &self.target,
            &self.details,
        ))
    }
}

/// One audit entry to write.
pub(crate) struct AuditEntry<'a> {
    pub actor: &'a str,
    pub action: &'a str,
    pub target: &'a str,
    pub details: &'a Value,
}

/// An audit entry (see `insert_audits`).
pub(crate) async fn insert_audit(
    tx: &Transaction<'_>,
    actor: &str,
    action: &str,
    target: &str,
    details: &Value,
) -> DbResult<()> {
    let entry = AuditEntry {
        actor,
        action,
        target,
        details,
    };
    insert_audits(tx, std::slice::from_ref(&entry)).await
}

/// The one place audit rows are written (admin writes, pool registration, the
/// operator CLI, and the bootstrap of the migration step), in order.
pub(crate) async fn insert_audits(
    tx: &Transaction<'_>,
    entries: &[AuditEntry<'_>],
) -> DbResult<()> {
    if entries.iter().any(|e| !e.details.is_object()) {
        return Err(DbError::failed("audit details must be a JSON object"));
    }
    if let [e] = entries {
        let stmt = tx.prepare_cached(queries::INSERT_AUDIT).await?;
        tx.execute(&stmt, &[&e.actor, &e.action, &e.target, e.details])
            .await?;
        return Ok(());
    }
    let actors: Vec<&str> = entries.iter().map(|e| e.actor).collect();
    let actions: Vec<&str> = entries.iter().map(|e| e.action).collect();
    let targets: Vec<&str> = entries.iter().map(|e| e.target).collect();
    let details: Vec<&Value> = entries.iter().map(|e| e.details).collect();
    let stmt = tx.prepare_cached(queries::INSERT_AUDITS).await?;
    tx.execute(&stmt, &[&actors, &actions, &targets, &details])
        .await?;
    Ok(())
}

/// Runs one command in its own transaction and commits it (the operator CLI's path;
/// the server goes through the database-writer actor).
pub async fn apply_now<C: WriteCommand>(
    pool: &deadpool_postgres::Pool,
    cmd: &C,
) -> DbResult<C::Output> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    let out = cmd.apply(&tx).await?;
    tx.commit().await?;
    Ok(out)
}
