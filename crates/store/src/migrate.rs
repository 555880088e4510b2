//! Applies the `sql/` migrations in order, once each, then `sql/functions.sql`
//! (every function and trigger, in its current form) whenever its text differs
//! from the copy last applied, and seeds the bootstrap super-admin. Safe to run
//! from several replicas at once: an advisory lock serialises them, and all of
//! it is one transaction.

use deadpool_postgres::Pool;

use super::queries;
use crate::error::{DbError, DbResult};

/// The migrations, in order. Compiled in so the binary carries its own schema.
pub const MIGRATIONS: &[(&str, &str)] = &[
    ("0001_schema", include_str!("../../../sql/0001_schema.sql")),
    (
        "0002_position_notify",
        include_str!("../../../sql/0002_position_notify.sql"),
    ),
    (
        "0003_borrow_notify",
        include_str!("../../../sql/0003_borrow_notify.sql"),
    ),
    (
        "0004_hot_health_factor_writes",
        include_str!("../../../sql/0004_hot_health_factor_writes.sql"),
    ),
    (
        "0005_hot_position_refresh",
        include_str!("../../../sql/0005_hot_position_refresh.sql"),
    ),
    (
        "0006_notify_origin",
        include_str!("../../../sql/0006_notify_origin.sql"),
    ),
    (
        "0007_pool_notify_terms",
        include_str!("../../../sql/0007_pool_notify_terms.sql"),
    ),
    (
        "0008_position_notify_columns",
        include_str!("../../../sql/0008_position_notify_columns.sql"),
    ),
    (
        "0009_history",
        include_str!("../../../sql/0009_history.sql"),
    ),
    (
        "0010_write_version",
        include_str!("../../../sql/0010_write_version.sql"),
    ),
    (
        "0011_feed_log",
        include_str!("../../../sql/0011_feed_log.sql"),
    ),
    (
        "0012_touch_log",
        include_str!("../../../sql/0012_touch_log.sql"),
    ),
    (
        "0013_processed_overlay",
        include_str!("../../../sql/0013_processed_overlay.sql"),
    ),
    (
        "0014_market_totals",
        include_str!("../../../sql/0014_market_totals.sql"),
    ),
    (
        "0015_chain_tip",
        include_str!("../../../sql/0015_chain_tip.sql"),
    ),
    (
        "0016_oracle_feeds",
        include_str!("../../../sql/0016_oracle_feeds.sql"),
    ),
    (
        "0017_processed_feeds",
        include_str!("../../../sql/0017_processed_feeds.sql"),
    ),
    (
        "0018_price_source",
        include_str!("../../../sql/0018_price_source.sql"),
    ),
    (
        "0019_webhooks",
        include_str!("../../../sql/0019_webhooks.sql"),
    ),
];

/// Every function and trigger, re-applied when it changes (docs/design.md §1).
pub const FUNCTIONS: &str = include_str!("../../../sql/functions.sql");

/// The digest that tells whether `FUNCTIONS` is the copy last applied: re-making
/// triggers takes a lock on their tables, so an unchanged file is not re-run.
pub fn functions_digest() -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(FUNCTIONS.as_bytes()))
}

/// Arbitrary constant naming the advisory lock that serialises migrations.
const MIGRATION_LOCK_KEY: i64 = 0x1e4d_e800_0001;

/// The versions applied by this call (and `functions` when sql/functions.sql
/// was re-applied). A database that cannot be reached is
/// `DatabaseUnavailable` (the caller may retry); SQL that fails is `Internal`.
pub async fn run(pool: &Pool, super_admin_pubkey: &str) -> DbResult<Vec<&'static str>> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK_KEY])
        .await?;
    tx.batch_execute(queries::CREATE_MIGRATIONS_TABLE).await?;
    let mut applied = Vec::new();
    for (version, sql) in MIGRATIONS {
        let done = tx
            .query_opt(queries::MIGRATION_APPLIED, &[version])
            .await?
            .is_some();
        if done {
            continue;
        }
        tx.batch_execute(sql)
            .await
            .map_err(|e| DbError::from(e).during(version))?;
        tx.execute(queries::RECORD_MIGRATION, &[version]).await?;
        applied.push(*version);
    }
    tx.batch_execute(queries::CREATE_FUNCTIONS_TABLE).await?;
    let digest = functions_digest();
    let current = tx.query_opt(queries::FUNCTIONS_DIGEST, &[]).await?;
    if current.is_none_or(|row| row.get::<_, String>(0) != digest) {
        tx.batch_execute(FUNCTIONS)
            .await
            .map_err(|e| DbError::from(e).during("functions.sql"))?;
        tx.execute(queries::RECORD_FUNCTIONS_DIGEST, &[&digest])
            .await?;
        applied.push("functions");
    }
    if !super_admin_pubkey.is_empty() {
        // Bootstrap (docs/design.md §5.6): adds the key, or re-activates it as super_admin.
        // Rerunning with a new key adds that key too; older ones are left alone.
        let changed = tx
            .query_opt(queries::BOOTSTRAP_SUPER_ADMIN, &[&super_admin_pubkey])
            .await?;
        if changed.is_some() {
            let details = serde_json::json!({ "role": "super_admin", "via": "bootstrap" });
            super::writes::insert_audit(&tx, "system", "add_admin", super_admin_pubkey, &details)
                .await?;
        }
    }
    tx.commit().await?;
    Ok(applied)
}
