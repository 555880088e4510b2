//! Whether a pool is in the index: only pools registered through
//! POST /api/pools/init are refreshed or have positions indexed (docs/design.md §4.9).
//! The one place this is asked, before any chain read of the pool: by the
//! on-demand syncs, and by the stream for what it is notified of. Also whether
//! the index holds a position (a streamed account closed on chain).

use deadpool_postgres::Pool;

use super::queries;
use crate::error::DbResult;
use lendex_domain::pubkey::Pubkey;

pub async fn is_registered(db: &Pool, cluster: &str, pool: &Pubkey) -> DbResult<bool> {
    let client = db.get().await?;
    let stmt = client.prepare_cached(queries::POOL_IS_REGISTERED).await?;
    Ok(client
        .query_opt(&stmt, &[&cluster, &pool.to_string()])
        .await?
        .is_some())
}

/// The owner and pool of a position the index holds.
pub async fn held_position(
    db: &Pool,
    cluster: &str,
    position: &Pubkey,
) -> DbResult<Option<(Pubkey, Pubkey)>> {
    let client = db.get().await?;
    let stmt = client.prepare_cached(queries::POSITION_HOLDER).await?;
    let Some(row) = client
        .query_opt(&stmt, &[&cluster, &position.to_string()])
        .await?
    else {
        return Ok(None);
    };
    let key = |i: usize| -> DbResult<Pubkey> {
        let text: String = row.get(i);
        text.parse()
            .map_err(|e| crate::error::DbError::failed(format!("stored address {text}: {e}")))
    };
    Ok(Some((key(0)?, key(1)?)))
}
