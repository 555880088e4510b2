//! The day partitions: made ahead (and on demand for a day a flush meets
//! first, such as after the clock jumped), and dropped whole once they leave
//! the retention window: detached CONCURRENTLY, then dropped, so readers and
//! the writer go on and no large table is vacuumed.

use std::collections::BTreeSet;

use chrono::NaiveDate;
use tokio_postgres::Client;

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
    let statements: Vec<String> = client
        .query(queries::RETENTION_STATEMENTS, &[&keep_from])
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    for statement in &statements {
        client.batch_execute(statement).await?;
    }
    Ok(statements)
}
