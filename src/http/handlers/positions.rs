//! Positions: the cached rows of a wallet (4.10), their refresh from chain
//! (4.12), and what the health-factor cache serves from memory: the unhealthy
//! feed (4.13), position detail (4.11) and the liquidation event stream.

use std::collections::HashMap;
use std::sync::Arc;

use crate::wire::formats::PubkeyText;
use actix_web::{HttpRequest, HttpResponse, web, web::Bytes};
use serde::Serialize;

use crate::actors::chain_reader::ReadAccounts;
use crate::actors::health_cache::{
    KeepBorrows, OwnerOf, OwnerPositions, OwnerRow, Reaches, Subscribe, commit,
};
use crate::domain::pubkey::{Pubkey, parse_pubkey};
use crate::domain::view_key::ViewKey;
use crate::domain::wad::{Big, borrow_debt, deposit_tokens};
use crate::engine::risk::liquidation_price_wire;
use crate::error::{ApiError, ApiResult};
use crate::http::body::{JsonBody, ParseBody};
use crate::http::conditional::{self, Conditional, LongPoll};
use crate::http::extract::{Params, PublicWrite};
use crate::http::handlers::pools::ensure_registered;
use crate::http::polls;
use crate::http::query::Query;
use crate::http::single_flight::{self, Key};
use crate::http::socket::bound_feed_socket;
use crate::http::state::AppState;
use crate::http::view_key::{self, ViewParams};
use crate::serve::poll_answers::{Body, Changes, OwnerBody};
use crate::store::reads::transactions;
use crate::wire::error::ErrorBody;
use crate::wire::positions::{
    BorrowTx, DetailResponse, Position, PositionDetail, PositionsResponse, SyncPositionRequest,
    SyncPositionResponse, UnhealthyResponse,
};
use chrono::DateTime;

impl ParseBody for SyncPositionRequest {
    type Call<'a> = (Pubkey, Pubkey);

    /// Both fields or `missing fields`; both pubkeys or `invalid`. Returns
    /// (pool, user).
    fn parse(body: &JsonBody) -> ApiResult<Self::Call<'_>> {
        let (Some(pool), Some(user)) = (body.str("pool_address")?, body.str("user")?) else {
            return Err(ApiError::MissingFields);
        };
        let (Ok(pool), Ok(user)) = (parse_pubkey(pool), parse_pubkey(user)) else {
            return Err(ApiError::Invalid);
        };
        Ok((pool, user))
    }
}

#[utoipa::path(get, path = "/api/positions/{user}", tag = "positions",
    params(("user" = PubkeyText, Path, description = "wallet"),
           LongPoll, ViewParams),
    responses((status = 200, body = PositionsResponse, description = "the wallet's positions (empty when it has none)", headers(("ETag" = String, description = "strong tag of the exact body"), ("Cache-Control" = String, description = "no-cache"), ("Lendex-Commitment" = String, description = "the view answered: confirmed or processed"), ("Lendex-Oracle" = String, description = "the price valued at: pool or feed"))),
        (status = 304, description = "not modified: If-None-Match lists the current ETag (no body)", headers(("ETag" = String, description = "the current answer's tag"), ("Lendex-Commitment" = String, description = "the view answered"), ("Lendex-Oracle" = String, description = "the price valued at"))),
        (status = 400, body = ErrorBody, description = "invalid (malformed wallet, or wait_ms out of range, or a commitment or oracle not served)")))]
pub async fn list_positions(
    req: HttpRequest,
    state: web::Data<AppState>,
    user: web::Path<String>,
) -> ApiResult<HttpResponse> {
    owner_answer(&req, &state, &user, OwnerBody::Positions).await
}

/// A per-owner answer under the request's conditions (`http::conditional`):
/// the rendered body, or rendered now from the health cache's rows.
async fn owner_answer(
    req: &HttpRequest,
    state: &web::Data<AppState>,
    user: &str,
    kind: OwnerBody,
) -> ApiResult<HttpResponse> {
    let owner = parse_pubkey(user).map_err(|_| ApiError::Invalid)?;
    let (view, rendered) = state.views.requested(Query(req.query_string()))?;
    let cond = Conditional::of(req.headers(), Query(req.query_string()))?;
    let answered = conditional::answer(state, (rendered, Changes::Bodies), cond, || async move {
        if let Some(body) = rendered.owner_body(&owner, kind) {
            return Ok(body);
        }
        let state = state.clone();
        single_flight::once(Key::Owner(owner, kind, view), move || async move {
            let held = owner_positions(&state, owner, view).await?;
            let generation = held.body_generation;
            let bytes = match kind {
                OwnerBody::Positions => positions_body(&owner, &held)?,
                OwnerBody::Detail => detail_body(&state, &owner, held).await?,
            };
            let body = Body::new(bytes);
            if let Some(rendered) = state.views.get(view) {
                rendered.keep_owner_body(owner, kind, generation, body.clone());
            }
            Ok(body)
        })
        .await
    })
    .await?;
    Ok(view_key::stamp(answered, view))
}

fn positions_body(owner: &Pubkey, held: &OwnerPositions) -> ApiResult<Bytes> {
    let positions = held
        .rows
        .iter()
        .map(|r| position(owner, held.health_factor, r))
        .collect();
    render(&PositionsResponse { positions })
}

/// A position as the health cache holds it, with the owner's account health factor.
fn position(owner: &Pubkey, health_factor: u128, row: &OwnerRow) -> Position {
    let p = &row.position;
    Position {
        position_address: p.address.to_string(),
        pool_address: p.pool.to_string(),
        owner: owner.to_string(),
        deposit_shares: p.amounts.deposit_shares.to_string(),
        borrow_principal: p.amounts.borrow_principal.to_string(),
        deposit_idx_snap: p.deposit_idx_snap.to_string(),
        borrow_idx_snap: p.amounts.borrow_idx_snap.to_string(),
        health_factor_wad: health_factor.to_string(),
        last_synced_at: DateTime::from_timestamp_micros(p.synced_us).unwrap_or_default(),
    }
}

fn render(value: &impl Serialize) -> ApiResult<Bytes> {
    serde_json::to_vec(value)
        .map(Bytes::from)
        .map_err(ApiError::internal)
}

/// An owner's positions as the health cache holds them (the same health factor
/// that the feed ranks and that `positions.health_factor_wad` stores).
async fn owner_positions(
    state: &AppState,
    owner: Pubkey,
    view: ViewKey,
) -> ApiResult<OwnerPositions> {
    Ok(state.cache.send(OwnerOf(owner, view)).await??)
}

#[utoipa::path(post, path = "/api/positions/sync", tag = "positions", request_body = SyncPositionRequest,
    responses((status = 200, body = SyncPositionResponse, description = "the position was read from chain and committed"),
        (status = 400, body = ErrorBody, description = "bad json | missing fields | invalid (an account is not the lending program's, or does not match)"),
        (status = 404, body = ErrorBody, description = "pool account not found (absent on chain, or not registered)"),
        (status = 429, body = ErrorBody, description = "rate limited"),
        (status = 502, body = ErrorBody, description = "rpc unavailable")))]
pub async fn sync_position(
    _: PublicWrite,
    state: web::Data<AppState>,
    body: JsonBody,
) -> ApiResult<HttpResponse> {
    let (pool, user) = SyncPositionRequest::parse(&body)?;
    ensure_registered(&state, &pool).await?;
    let position = state.ingest.position_address(&pool, &user);
    // One getMultipleAccounts for both; identical concurrent syncs share it.
    let reads = state
        .chain
        .send(ReadAccounts {
            keys: vec![pool, position],
        })
        .await??;
    let (sync, exists) = state.ingest.position(&pool, &user, &reads[0], &reads[1])?;
    commit(&state.writer, &state.cache, sync, Reaches::Awaited).await?;
    Ok(HttpResponse::Ok().json(SyncPositionResponse {
        ok: true,
        exists,
        position_address: position.to_string(),
    }))
}

#[utoipa::path(get, path = "/api/positions/unhealthy", tag = "positions",
    params(("pool" = Option<PubkeyText>, Query, description = "keep only debt rows in this pool"),
           ("limit" = Option<i64>, Query, description = "default 50, clamped to 200"),
           LongPoll, ViewParams),
    responses((status = 200, body = UnhealthyResponse, description = "positions of owners whose account health factor is below 1 WAD, worst first", headers(("ETag" = String, description = "strong tag of the exact body"), ("Cache-Control" = String, description = "no-cache"), ("Lendex-Commitment" = String, description = "the view answered: confirmed or processed"), ("Lendex-Oracle" = String, description = "the price valued at: pool or feed"))),
        (status = 304, description = "not modified: If-None-Match lists the current ETag (no body)", headers(("ETag" = String, description = "the current answer's tag"), ("Lendex-Commitment" = String, description = "the view answered"), ("Lendex-Oracle" = String, description = "the price valued at"))),
        (status = 400, body = ErrorBody, description = "invalid (malformed pool, or wait_ms out of range, or a commitment or oracle not served)"),
        (status = 503, body = ErrorBody, description = "database unavailable (cache not loaded yet)")))]
pub async fn unhealthy(state: web::Data<AppState>, params: Params) -> ApiResult<HttpResponse> {
    polls::serve(
        &state,
        params.request(),
        polls::unhealthy_answer(params.query())?,
    )
    .await
}

#[utoipa::path(get, path = "/api/positions/{user}/detail", tag = "positions",
    params(("user" = PubkeyText, Path, description = "wallet"),
           LongPoll, ViewParams),
    responses((status = 200, body = DetailResponse, description = "the wallet's positions with token amounts, interest and APYs", headers(("ETag" = String, description = "strong tag of the exact body"), ("Cache-Control" = String, description = "no-cache"), ("Lendex-Commitment" = String, description = "the view answered: confirmed or processed"), ("Lendex-Oracle" = String, description = "the price valued at: pool or feed"))),
        (status = 304, description = "not modified: If-None-Match lists the current ETag (no body)", headers(("ETag" = String, description = "the current answer's tag"), ("Lendex-Commitment" = String, description = "the view answered"), ("Lendex-Oracle" = String, description = "the price valued at"))),
        (status = 400, body = ErrorBody, description = "invalid (malformed wallet, or wait_ms out of range, or a commitment or oracle not served)")))]
pub async fn detail(
    req: HttpRequest,
    state: web::Data<AppState>,
    user: web::Path<String>,
) -> ApiResult<HttpResponse> {
    owner_answer(&req, &state, &user, OwnerBody::Detail).await
}

/// docs/design.md §16.3's rows, with each wallet's recent borrows (kept by the cache once read).
async fn detail_body(state: &AppState, owner: &Pubkey, held: OwnerPositions) -> ApiResult<Bytes> {
    let mut borrows: HashMap<String, Vec<BorrowTx>> = HashMap::new();
    if !held.rows.is_empty() {
        let recent = match &held.borrows {
            Some(recent) => recent.clone(),
            None => {
                let recent = Arc::new(recent_borrows(state, &owner.to_string()).await?);
                state.cache.do_send(KeepBorrows {
                    owner: *owner,
                    generation: held.borrow_generation,
                    borrows: recent.clone(),
                });
                recent
            }
        };
        for (pool, tx) in recent.iter() {
            borrows.entry(pool.clone()).or_default().push(tx.clone());
        }
    }
    let positions = held
        .rows
        .into_iter()
        .map(|r| {
            let p = &r.position;
            let pool_address = p.pool.to_string();
            let debt = borrow_debt(
                p.amounts.borrow_principal,
                r.borrow_index_wad,
                p.amounts.borrow_idx_snap,
            );
            let principal = Big::from(p.amounts.borrow_principal);
            PositionDetail {
                borrow_txs: borrows.remove(&pool_address).unwrap_or_default(),
                pool_address,
                symbol: r.symbol.clone().unwrap_or_default(),
                deposit_shares: p.amounts.deposit_shares.to_string(),
                borrow_principal: p.amounts.borrow_principal.to_string(),
                deposit_tokens: deposit_tokens(p.amounts.deposit_shares, r.deposit_index_wad)
                    .to_string(),
                borrow_debt: debt.to_string(),
                original_deposit: p.original_deposit.to_string(),
                principal: principal.to_string(),
                interest: debt.saturating_sub(principal).to_string(),
                supply_apy: r.supply_apy,
                borrow_apy: r.borrow_apy,
                health_factor_wad: held.health_factor.to_string(),
                liquidation_price: r
                    .liquidation_price
                    .map(|(lp, expo)| liquidation_price_wire(&lp, expo)),
            }
        })
        .collect();
    render(&DetailResponse { positions })
}

/// A wallet's borrows, at most 10 per pool, newest first, not failed (docs/design.md §4.11).
async fn recent_borrows(state: &AppState, wallet: &str) -> ApiResult<Vec<(String, BorrowTx)>> {
    Ok(transactions::recent_borrows(&state.store, state.cluster.as_str(), wallet).await?)
}

#[utoipa::path(get, path = "/api/positions/unhealthy/stream", tag = "positions",
    params(("Last-Event-ID" = Option<String>, Header, description = "the `id` of the last event received: a reconnect inside the replay window gets exactly the events it missed, and no snapshot"),
           ViewParams),
    responses((status = 200, content_type = "text/event-stream",
        headers(("Lendex-Commitment" = String, description = "the view streamed: confirmed or processed"), ("Lendex-Oracle" = String, description = "the price valued at: pool or feed")),
        description = "Server-Sent Events: `candidate_start` (an owner's health factor fell below 1 WAD; also sent for every owner already below on connect), `candidate_update` (changed while below), `candidate_stop` (recovered or debt gone). Each has an `id: <epoch>.<sequence>`; each `data` is {owner, account_health_factor_wad, positions: [unhealthy rows], liquidation: the owner's quote as in GET /api/liquidations, or null, slot, commitment (the view), published_at_ms}. The snapshot's events carry the id of the last live event they include. A reconnect whose Last-Event-ID cannot resume (another epoch, older than `cache.replay_bytes` of events, garbage) first gets a `reset` event ({reason}) and then the snapshot. A comment line every second keeps the connection alive. A subscriber more than `cache.subscriber_max_lag_bytes` of live events behind gets one `resync` event ({reason, resync: \"/api/positions/unhealthy\"}) and the stream ends: reconnect with its Last-Event-ID."),
        (status = 400, body = ErrorBody, description = "invalid: a `commitment` or `oracle` not served here (processed on a server reading the chain at confirmed, feed on one not reading feeds), or any other value"),
        (status = 429, body = ErrorBody, description = "rate limited: `server.max_streams_per_ip` streams open from this address, or `server.max_streams` in all (Retry-After)"),
        (status = 503, body = ErrorBody, description = "database unavailable (cache not loaded yet); or draining: this replica is stopping, connect again (Retry-After; a balancer sends it to another replica)")))]
pub async fn unhealthy_stream(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    if state.drain.is_draining() {
        return Err(ApiError::Draining);
    }
    let (view, _) = state.views.requested(Query(req.query_string()))?;
    let ticket = state
        .streams
        .admit(req.peer_addr().map(|a| a.ip()))
        .map_err(|cap| {
            crate::metrics::stream_refused(cap.label());
            ApiError::RateLimited {
                retry_after_secs: STREAM_RETRY_AFTER_SECS,
            }
        })?;
    let last_event_id = req
        .headers()
        .get("Last-Event-ID")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let socket = bound_feed_socket(&req);
    let stream = state
        .cache
        .send(Subscribe {
            socket,
            last_event_id,
            view,
        })
        .await??;
    let [commitment, oracle] = view_key::values(view);
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("Cache-Control", "no-cache"))
        .insert_header(("X-Accel-Buffering", "no"))
        .insert_header(commitment)
        .insert_header(oracle)
        .streaming(stream.holding(ticket)))
}

/// A refused stream is told to try again after this long (a stream's place
/// frees when one closes, which a client cannot see).
const STREAM_RETRY_AFTER_SECS: u64 = 5;
