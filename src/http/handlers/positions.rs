//! Positions: the cached rows of a wallet (spec 4.10) and their refresh from
//! chain (4.12).

use actix_web::{HttpResponse, web};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::actors::chain_reader::ReadAccounts;
use crate::actors::db_writer::write;
use crate::app::AppState;
use crate::db::chain_writes::SyncPosition;
use crate::db::queries;
use crate::domain::accounts::{decode_pool, decode_position, position_address};
use crate::domain::pubkey::parse_pubkey;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::http::body::JsonBody;
use crate::http::extract::PublicWrite;
use crate::http::handlers::pools::ensure_registered;
use crate::model::Position;

#[derive(Serialize, ToSchema)]
pub struct PositionsResponse {
    pub positions: Vec<Position>,
}

#[derive(Deserialize, ToSchema)]
pub struct SyncPositionRequest {
    pub pool_address: String,
    /// The wallet; the position address is derived from pool and wallet.
    pub user: String,
}

#[derive(Serialize, ToSchema)]
pub struct SyncPositionResponse {
    pub ok: bool,
    /// False when the position no longer exists on chain (the row was removed).
    pub exists: bool,
    pub position_address: String,
}

#[utoipa::path(get, path = "/api/positions/{user}", tag = "positions",
    params(("user" = String, Path, description = "wallet")),
    responses((status = 200, body = PositionsResponse),
        (status = 400, body = ErrorBody, description = "invalid (malformed wallet)")))]
pub async fn list_positions(
    state: web::Data<AppState>,
    user: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let user = user.into_inner();
    parse_pubkey(&user).map_err(|_| ApiError::Invalid)?;
    let client = state.db.get().await?;
    let stmt = client.prepare_cached(queries::LIST_OWNER_POSITIONS).await?;
    let rows = client
        .query(&stmt, &[&state.cluster.as_str(), &user])
        .await?;
    let positions = rows.iter().map(Position::from_row).collect();
    Ok(HttpResponse::Ok().json(PositionsResponse { positions }))
}

#[utoipa::path(post, path = "/api/positions/sync", tag = "positions", request_body = SyncPositionRequest,
    responses((status = 200, body = SyncPositionResponse),
        (status = 400, body = ErrorBody, description = "bad json | missing fields | invalid (an account is not the lending program's, or does not match)"),
        (status = 404, body = ErrorBody, description = "pool account not found (absent on chain, or not registered)"),
        (status = 429, body = ErrorBody, description = "rate limited"),
        (status = 502, body = ErrorBody, description = "rpc unavailable")))]
pub async fn sync_position(
    _: PublicWrite,
    state: web::Data<AppState>,
    body: JsonBody,
) -> ApiResult<HttpResponse> {
    let (Some(pool_addr), Some(user)) = (body.str("pool_address")?, body.str("user")?) else {
        return Err(ApiError::MissingFields);
    };
    let (Ok(pool_key), Ok(user_key)) = (parse_pubkey(pool_addr), parse_pubkey(user)) else {
        return Err(ApiError::Invalid);
    };
    ensure_registered(&state, pool_addr).await?;
    let position_key = position_address(&state.program_id, &pool_key, &user_key).0;
    // One getMultipleAccounts for both; identical concurrent syncs share it.
    let reads = state
        .chain
        .send(ReadAccounts {
            keys: vec![pool_key, position_key],
        })
        .await
        .map_err(|_| ApiError::Internal)??;
    let pool_account = reads[0]
        .account
        .as_ref()
        .ok_or(ApiError::PoolAccountNotFound)?;
    if pool_account.owner != state.program_id {
        return Err(ApiError::Invalid);
    }
    let pool = decode_pool(&pool_account.data).map_err(|_| ApiError::Invalid)?;
    let position = match &reads[1].account {
        None => None,
        Some(account) => {
            if account.owner != state.program_id {
                return Err(ApiError::Invalid);
            }
            let position = decode_position(&account.data).map_err(|_| ApiError::Invalid)?;
            if position.owner != user_key || position.pool != pool_key {
                return Err(ApiError::Invalid);
            }
            Some(position)
        }
    };
    let exists = position.is_some();
    write(
        &state.writer,
        SyncPosition {
            cluster: state.cluster.as_str(),
            pool_address: pool_addr.to_string(),
            pool,
            position_address: position_key.to_string(),
            owner: user.to_string(),
            position,
            slot: reads[0].slot.min(reads[1].slot),
        },
    )
    .await?;
    Ok(HttpResponse::Ok().json(SyncPositionResponse {
        ok: true,
        exists,
        position_address: position_key.to_string(),
    }))
}
