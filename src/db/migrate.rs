//! Applies the `sql/` migrations in order, once each, and seeds the bootstrap
//! super-admin. Safe to run from several replicas at once: an advisory lock
//! serialises them, and every file is applied inside its own transaction.

use deadpool_postgres::Pool;

use super::queries;

/// The migrations, in order. Compiled in so the binary carries its own schema.
pub const MIGRATIONS: &[(&str, &str)] = &[
    ("0001_schema", include_str!("../../sql/0001_schema.sql")),
    (
        "0002_position_notify",
        include_str!("../../sql/0002_position_notify.sql"),
    ),
    (
        "0003_borrow_notify",
        include_str!("../../sql/0003_borrow_notify.sql"),
    ),
    (
        "0004_hot_health_factor_writes",
        include_str!("../../sql/0004_hot_health_factor_writes.sql"),
    ),
    (
        "0005_hot_position_refresh",
        include_str!("../../sql/0005_hot_position_refresh.sql"),
    ),
];

/// Arbitrary constant naming the advisory lock that serialises migrations.
const MIGRATION_LOCK_KEY: i64 = 0x1e4d_e800_0001;

pub async fn run(pool: &Pool, super_admin_pubkey: &str) -> Result<Vec<&'static str>, String> {
    let mut client = pool
        .get()
        .await
        .map_err(|e| format!("database unavailable: {e}"))?;
    let tx = client.transaction().await.map_err(|e| e.to_string())?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK_KEY])
        .await
        .map_err(|e| e.to_string())?;
    tx.batch_execute(queries::CREATE_MIGRATIONS_TABLE)
        .await
        .map_err(|e| e.to_string())?;
    let mut applied = Vec::new();
    for (version, sql) in MIGRATIONS {
        let done = tx
            .query_opt(queries::MIGRATION_APPLIED, &[version])
            .await
            .map_err(|e| e.to_string())?
            .is_some();
        if done {
            continue;
        }
        tx.batch_execute(sql)
            .await
            .map_err(|e| format!("migration {version} failed: {e}"))?;
        tx.execute(queries::RECORD_MIGRATION, &[version])
            .await
            .map_err(|e| e.to_string())?;
        applied.push(*version);
    }
    if !super_admin_pubkey.is_empty() {
        // Bootstrap (spec 5.6): adds the key, or re-activates it as super_admin.
        // Rerunning with a new key adds that key too; older ones are left alone.
        let changed = tx
            .query_opt(queries::BOOTSTRAP_SUPER_ADMIN, &[&super_admin_pubkey])
            .await
            .map_err(|e| e.to_string())?;
        if changed.is_some() {
            let details = serde_json::json!({ "role": "super_admin", "via": "bootstrap" });
            super::writes::insert_audit(&tx, "system", "add_admin", super_admin_pubkey, &details)
                .await
                .map_err(|e| e.to_string())?;
        }
    }
    tx.commit().await.map_err(|e| e.to_string())?;
    Ok(applied)
}
