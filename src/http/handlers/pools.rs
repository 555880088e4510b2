//! GET /api/pools: the cached index (spec 4.7).

use actix_web::{HttpResponse, web};
use serde::Serialize;
use utoipa::ToSchema;

use crate::app::AppState;
use crate::db::queries;
use crate::error::ApiResult;
use crate::model::Pool;

#[derive(Serialize, ToSchema)]
pub struct PoolsResponse {
    pub pools: Vec<Pool>,
}

#[utoipa::path(get, path = "/api/pools", tag = "pools",
    responses((status = 200, body = PoolsResponse)))]
pub async fn list_pools(state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let client = state.db.get().await?;
    let stmt = client.prepare_cached(queries::LIST_POOLS).await?;
    let rows = client.query(&stmt, &[&state.cluster.as_str()]).await?;
    let pools = rows.iter().map(Pool::from_row).collect();
    Ok(HttpResponse::Ok().json(PoolsResponse { pools }))
}
