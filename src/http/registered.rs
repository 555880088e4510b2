//! Whether a pool is in the index: only pools registered through /api/pools/init
//! are refreshed or have positions indexed (decisions §5).

use crate::db::queries;
use crate::error::{ApiError, ApiResult};
use crate::http::state::AppState;

/// An unregistered address is 404 `pool account not found`.
pub async fn ensure_registered(state: &AppState, pool_address: &str) -> ApiResult<()> {
    let client = state.db.get().await?;
    let stmt = client.prepare_cached(queries::POOL_REGISTERED).await?;
    match client
        .query_opt(&stmt, &[&state.cluster.as_str(), &pool_address])
        .await?
    {
        Some(_) => Ok(()),
        None => Err(ApiError::PoolAccountNotFound),
    }
}
