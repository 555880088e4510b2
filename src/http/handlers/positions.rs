//! Positions: the cached rows of a wallet (4.10), their refresh from chain
//! (4.12), and what the health-factor cache serves from memory: the unhealthy
//! feed (4.13), position detail (4.11) and the liquidation event stream.

use std::collections::HashMap;
use std::time::Duration;

use actix_web::{HttpResponse, web, web::Bytes};
use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::actors::chain_reader::ReadAccounts;
use crate::actors::db_writer::write;
use crate::actors::health_cache::{Changed, Detail, Subscribe, Unhealthy, UnhealthyRow};
use crate::app::AppState;
use crate::db::chain_writes::SyncPosition;
use crate::db::queries;
use crate::domain::accounts::{decode_position, position_address};
use crate::domain::limits::clamp_limit;
use crate::domain::pubkey::parse_pubkey;
use crate::domain::wad::Big;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::http::body::JsonBody;
use crate::http::extract::{Params, PublicWrite};
use crate::http::handlers::pools::{decode_pool_read, ensure_registered};
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
    let pool = decode_pool_read(&state, &reads[0])?;
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
    let owner = user.to_string();
    write(
        &state.writer,
        SyncPosition {
            cluster: state.cluster.as_str(),
            pool_address: pool_addr.to_string(),
            pool,
            position_address: position_key.to_string(),
            owner: owner.clone(),
            position,
            slot: reads[0].slot.min(reads[1].slot),
        },
    )
    .await?;
    refresh_cache(&state, vec![owner], vec![pool_addr.to_string()]).await;
    Ok(HttpResponse::Ok().json(SyncPositionResponse {
        ok: true,
        exists,
        position_address: position_key.to_string(),
    }))
}

/// The body of GET /api/positions/unhealthy (rendered by the cache; documented here).
#[allow(dead_code)]
#[derive(Serialize, ToSchema)]
pub struct UnhealthyResponse {
    pub positions: Vec<UnhealthyRow>,
}

#[utoipa::path(get, path = "/api/positions/unhealthy", tag = "positions",
    params(("pool" = Option<String>, Query, description = "keep only debt rows in this pool"),
           ("limit" = Option<i64>, Query, description = "default 50, clamped to 200")),
    responses((status = 200, body = UnhealthyResponse),
        (status = 400, body = ErrorBody, description = "invalid (malformed pool)"),
        (status = 503, body = ErrorBody, description = "database unavailable (cache not loaded yet)")))]
pub async fn unhealthy(state: web::Data<AppState>, params: Params) -> ApiResult<HttpResponse> {
    let pool = params.pubkey("pool")?.map(str::to_string);
    let limit = clamp_limit(params.get("limit")) as usize;
    // The cache answers with the rendered body, shared by every poller until the
    // feed changes.
    let body = state
        .cache
        .send(Unhealthy { pool, limit })
        .await
        .map_err(|_| ApiError::Internal)??;
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(body))
}

#[derive(Serialize, ToSchema)]
pub struct BorrowTx {
    pub signature: String,
    pub amount: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// Spec 2.3.
#[derive(Serialize, ToSchema)]
pub struct PositionDetail {
    pub pool_address: String,
    /// The pool's symbol, or "" when it has none.
    pub symbol: String,
    pub deposit_shares: String,
    pub borrow_principal: String,
    /// floor(deposit_shares x deposit_index / WAD)
    pub deposit_tokens: String,
    /// ceil(borrow_principal x borrow_index / borrow_idx_snap): principal plus interest.
    pub borrow_debt: String,
    pub original_deposit: String,
    pub principal: String,
    /// borrow_debt - principal.
    pub interest: String,
    /// Fraction (0.05 is 5%).
    pub supply_apy: f64,
    pub borrow_apy: f64,
    /// Borrows of this wallet in this pool, not failed, newest first, at most 10.
    pub borrow_txs: Vec<BorrowTx>,
    /// The account-level health factor, the same on every row.
    pub health_factor_wad: String,
}

#[derive(Serialize, ToSchema)]
pub struct DetailResponse {
    pub positions: Vec<PositionDetail>,
}

#[utoipa::path(get, path = "/api/positions/{user}/detail", tag = "positions",
    params(("user" = String, Path, description = "wallet")),
    responses((status = 200, body = DetailResponse),
        (status = 400, body = ErrorBody, description = "invalid (malformed wallet)")))]
pub async fn detail(
    state: web::Data<AppState>,
    user: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let user = user.into_inner();
    parse_pubkey(&user).map_err(|_| ApiError::Invalid)?;
    let rows = state
        .cache
        .send(Detail {
            owner: user.clone(),
        })
        .await
        .map_err(|_| ApiError::Internal)??;
    let mut borrows: HashMap<String, Vec<BorrowTx>> = HashMap::new();
    if !rows.is_empty() {
        let client = state.db.get().await?;
        let stmt = client.prepare_cached(queries::RECENT_BORROWS).await?;
        for row in client
            .query(&stmt, &[&state.cluster.as_str(), &user])
            .await?
        {
            borrows
                .entry(row.get("pool_address"))
                .or_default()
                .push(BorrowTx {
                    signature: row.get("signature"),
                    amount: row.get("amount"),
                    created_at: row.get("created_at"),
                });
        }
    }
    let positions = rows
        .into_iter()
        .map(|r| {
            let principal = Big::from(r.borrow_principal);
            let interest = r.borrow_debt.saturating_sub(principal);
            PositionDetail {
                borrow_txs: borrows.remove(&r.pool_address).unwrap_or_default(),
                pool_address: r.pool_address,
                symbol: r.symbol,
                deposit_shares: r.deposit_shares.to_string(),
                borrow_principal: r.borrow_principal.to_string(),
                deposit_tokens: r.deposit_tokens.to_string(),
                borrow_debt: r.borrow_debt.to_string(),
                original_deposit: r.original_deposit.to_string(),
                principal: principal.to_string(),
                interest: interest.to_string(),
                supply_apy: r.supply_apy,
                borrow_apy: r.borrow_apy,
                health_factor_wad: r.health_factor_wad.to_string(),
            }
        })
        .collect();
    Ok(HttpResponse::Ok().json(DetailResponse { positions }))
}

/// A comment line every 15 s keeps proxies from closing an idle feed.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

#[utoipa::path(get, path = "/api/positions/unhealthy/stream", tag = "positions",
    responses((status = 200, content_type = "text/event-stream",
        description = "Server-Sent Events: `candidate_start` (an owner's health factor fell below 1 WAD; also sent for every owner already below on connect), `candidate_update` (changed while below), `candidate_stop` (recovered or debt gone). Each `data` is {owner, account_health_factor_wad, positions: [unhealthy rows]}.")))]
pub async fn unhealthy_stream(state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let rx = state
        .cache
        .send(Subscribe)
        .await
        .map_err(|_| ApiError::Internal)??;
    let ticks = tokio::time::interval_at(tokio::time::Instant::now() + KEEP_ALIVE, KEEP_ALIVE);
    let hello = futures_util::stream::once(async {
        Ok::<_, std::convert::Infallible>(Bytes::from_static(b": lendex liquidation feed\n\n"))
    });
    let events = futures_util::stream::unfold((rx, ticks), |(mut rx, mut ticks)| async move {
        let frame = tokio::select! {
            event = rx.recv() => {
                // Everything already queued goes out in one write.
                let first = event?;
                match rx.try_recv() {
                    Err(_) => first,
                    Ok(second) => {
                        let mut batch = web::BytesMut::from(&first[..]);
                        batch.extend_from_slice(&second);
                        while let Ok(more) = rx.try_recv() {
                            batch.extend_from_slice(&more);
                        }
                        batch.freeze()
                    }
                }
            }
            _ = ticks.tick() => Bytes::from_static(b": keep-alive\n\n"),
        };
        Some((Ok(frame), (rx, ticks)))
    });
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("Cache-Control", "no-cache"))
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(hello.chain(events)))
}

/// After a committed write: waits until this replica's cache has applied it, so
/// the caller reads its own write from the feed. (Other replicas learn of it
/// through NOTIFY.) The write is committed either way, so a cache hiccup is
/// logged, not reported.
pub async fn refresh_cache(state: &AppState, owners: Vec<String>, pools: Vec<String>) {
    match state.cache.send(Changed { owners, pools }).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "cache refresh after write failed; NOTIFY will retry")
        }
        Err(e) => tracing::warn!(error = %e, "cache unreachable after write"),
    }
}
