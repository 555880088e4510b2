//! The day partitions: made ahead (and on demand for a day a flush meets
//! first, such as after the clock jumped), and dropped whole once they leave
//! the retention window: detached CONCURRENTLY, then dropped, so readers and
//! the writer go on and no large table is vacuumed.

use std::collections::BTreeSet;

use chrono::NaiveDate;
use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

use super::queries;

/// The days with attached partitions.
pub async fn days(client: &Client) -> Result<BTreeSet<NaiveDate>, tokio_postgres::Error> {
    Ok(client
        .query(queries::PARTITION_DAYS, &[])
        .await?
        .iter()
        .map(|r| r.get::<_, NaiveDate>(0))
        .collect())
}

/// How many partitions exist (every table's, detached leftovers included).
pub async fn count(client: &Client) -> Result<i64, tokio_postgres::Error> {
    Ok(client
        .query_one(queries::PARTITION_COUNT, &[])
        .await?
        .get(0))
}

/// Drops every day before `keep_from`; returns the statements run. Each runs
/// on its own (a concurrent detach cannot run inside a transaction).
pub async fn drop_before(
    client: &Client,
    keep_from: NaiveDate,
) -> Result<Vec<String>, tokio_postgres::Error> {
    // One maintainer at a time (a replica taking over, a maintenance asked
    // for while the timer's runs): two DETACH ... CONCURRENTLY of one day
    // fail each other. The statements are listed once the lock is held.
    client.execute(queries::RETENTION_LOCK, &[]).await?;
    let dropped = async {
        let statements: Vec<String> = client
            .query(queries::RETENTION_STATEMENTS, &[&keep_from])
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect();
        for statement in &statements {
            match client.batch_execute(statement).await {
                // Dropped meanwhile by hand: nothing left to do for it.
                Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => {}
                other => other?,
            }
        }
        Ok(statements)
    }
    .await;
    // (A session that failed ends, and its lock with it.)
    let _ = client.execute(queries::RETENTION_UNLOCK, &[]).await;
    dropped
}
