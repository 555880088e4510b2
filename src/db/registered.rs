//! Whether a pool is in the index: only pools registered through
//! POST /api/pools/init are refreshed or have positions indexed (decisions §5).
//! The one place this is asked, before any chain read of the pool: by the
//! on-demand syncs, and by the stream for what it is notified of.

use deadpool_postgres::Pool;

use super::queries;
use crate::domain::pubkey::Pubkey;
use crate::error::ApiResult;

pub async fn is_registered(db: &Pool, cluster: &str, pool: &Pubkey) -> ApiResult<bool> {
    let client = db.get().await?;
    let stmt = client.prepare_cached(queries::POOL_IS_REGISTERED).await?;
    Ok(client
        .query_opt(&stmt, &[&cluster, &pool.to_string()])
        .await?
        .is_some())
}
