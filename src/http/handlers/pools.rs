//! Pools: the cached index (docs/design.md §4.7), registration by an allowlisted admin
//! (§4.8) and the refresh of a registered pool from chain (§4.9).

use actix_web::{HttpRequest, HttpResponse, web};

use std::time::Duration;

use crate::actors::chain_reader::{FirstSignature, ReadAccounts, ScanPools};
use crate::actors::chain_sync::Reconcile;
use crate::actors::health_cache::{PoolStatus, Reaches, commit};
use crate::chain::rpc::AccountRead;
use crate::domain::auth_message::init_pool_action;
use crate::domain::pubkey::{Pubkey, parse_pubkey};
use crate::error::{ApiError, ApiResult};
use crate::http::body::{JsonBody, ParseBody};
use crate::http::conditional::{self, Conditional, LongPoll};
use crate::http::extract::PublicWrite;
use crate::http::polls;
use crate::http::query::Query;
use crate::http::signed::{Credentials, Need, authorize, credentials};
use crate::http::single_flight::{self, Key};
use crate::http::state::AppState;
use crate::ingest::Registration;
use crate::serve::poll_answers::{Body, Changes, now_seconds};
use crate::store::chain_writes::{AccountWrite, SlotWrites};
use crate::store::reads;
use crate::wire::error::ErrorBody;
use crate::wire::formats::PubkeyText;
use crate::wire::pools::{
    InitPoolRequest, InitPoolResponse, PoolOnChain, PoolStatusResponse, PoolsResponse,
    SyncPoolRequest, SyncPoolResponse, UnregisteredPool, UnregisteredPoolsResponse,
};

/// A pool registration as the handler needs it: the credentials, and what
/// the body claims (checked against the chain by the ingest step).
pub struct InitPoolCall<'a> {
    pub creds: Credentials<'a>,
    pub registration: Registration<'a>,
}

impl ParseBody for InitPoolRequest {
    type Call<'a> = InitPoolCall<'a>;

    /// docs/design.md §4.8's `missing fields` first, then `invalid` for anything malformed,
    /// all before any nonce is spent.
    fn parse(body: &JsonBody) -> ApiResult<Self::Call<'_>> {
        let creds = credentials(body)?;
        let fields = (
            body.str("pool_address")?,
            body.str("token_mint")?,
            body.str("authority")?,
            body.str("vault")?,
            body.str("init_signature")?,
        );
        let bumps = (
            body.u8("pool_bump")?,
            body.u8("authority_bump")?,
            body.u8("vault_bump")?,
        );
        let (
            Some(creds),
            (Some(pool_addr), Some(mint), Some(authority), Some(vault), Some(init_signature)),
            (Some(pool_bump), Some(authority_bump), Some(vault_bump)),
        ) = (creds, fields, bumps)
        else {
            return Err(ApiError::MissingFields);
        };
        let symbol = symbol(body)?;
        let keys = [creds.actor, pool_addr, mint, authority, vault].map(parse_pubkey);
        let [
            Ok(actor_key),
            Ok(pool_key),
            Ok(mint_key),
            Ok(authority_key),
            Ok(vault_key),
        ] = keys
        else {
            return Err(ApiError::Invalid);
        };
        if init_signature.chars().count() > MAX_SIGNATURE_CHARS
            || !init_signature.chars().all(|c| c.is_ascii_graphic())
        {
            return Err(ApiError::Invalid);
        }
        let registration = Registration {
            actor: actor_key,
            pool: pool_key,
            mint: mint_key,
            authority: authority_key,
            vault: vault_key,
            bumps: (pool_bump, authority_bump, vault_bump),
            symbol,
            init_signature,
        };
        Ok(InitPoolCall {
            creds,
            registration,
        })
    }
}

impl ParseBody for SyncPoolRequest {
    type Call<'a> = (Pubkey, Option<&'a str>);

    /// docs/design.md §4.9's `pool_address required` and `bad pubkey: <reason>`, then an
    /// over-long symbol is `invalid`. Returns (pool, symbol).
    fn parse(body: &JsonBody) -> ApiResult<Self::Call<'_>> {
        let pool = body
            .str("pool_address")?
            .ok_or(ApiError::Required("pool_address required"))?;
        let pool = parse_pubkey(pool).map_err(ApiError::BadPubkey)?;
        Ok((pool, symbol(body)?))
    }
}

/// Longest symbol accepted.
const MAX_SYMBOL_CHARS: usize = 32;
const MAX_SIGNATURE_CHARS: usize = 128;

#[utoipa::path(get, path = "/api/pools", tag = "pools",
    params(LongPoll),
    responses((status = 200, body = PoolsResponse, description = "registered pools of the cluster", headers(("ETag" = String, description = "strong tag of the exact body"), ("Cache-Control" = String, description = "no-cache"))),
        (status = 304, description = "not modified: If-None-Match lists the current ETag (no body)", headers(("ETag" = String, description = "the current answer's tag"))),
        (status = 400, body = ErrorBody, description = "invalid (wait_ms out of range)")))]
pub async fn list_pools(req: HttpRequest, state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let cond = Conditional::of(req.headers(), Query(req.query_string()))?;
    conditional::answer(
        &state,
        (&state.views.confirmed, Changes::Bodies),
        cond,
        || async {
            match state.views.confirmed.pools(now_seconds()) {
                Some(body) => Ok(body),
                // Held polls woken together read it once per worker.
                None => single_flight::once(Key::Pools, || pools_body(state.clone())).await,
            }
        },
    )
    .await
}

/// The index, read and rendered now, and kept for the rest of this second.
async fn pools_body(state: web::Data<AppState>) -> ApiResult<Body> {
    let now = now_seconds();
    let generation = state.views.confirmed.owner_generation();
    let pools = reads::pools::list(&state.store, state.cluster.as_str()).await?;
    let bytes = serde_json::to_vec(&PoolsResponse { pools }).map_err(ApiError::internal)?;
    let body = Body::new(bytes.into());
    state
        .views
        .confirmed
        .keep_pools(now, generation, body.clone());
    Ok(body)
}

fn symbol(body: &JsonBody) -> ApiResult<Option<&str>> {
    match body.str("symbol")? {
        Some(s) if s.chars().count() > MAX_SYMBOL_CHARS || s.chars().any(char::is_control) => {
            Err(ApiError::Invalid)
        }
        other => Ok(other),
    }
}

#[utoipa::path(post, path = "/api/pools/init", tag = "pools", request_body = InitPoolRequest,
    responses((status = 200, body = InitPoolResponse, description = "registered (or already registered)"),
        (status = 400, body = ErrorBody, description = "bad json | missing fields | invalid (the body does not match the on-chain pool, or the mint is not a mint)"),
        (status = 401, body = ErrorBody, description = "bad signature | nonce invalid or expired | not authorized (not an admin, or not the pool's on-chain authority)"),
        (status = 404, body = ErrorBody, description = "pool account not found"),
        (status = 502, body = ErrorBody, description = "rpc unavailable")))]
pub async fn init_pool(state: web::Data<AppState>, body: JsonBody) -> ApiResult<HttpResponse> {
    let InitPoolCall {
        creds,
        registration,
    } = InitPoolRequest::parse(&body)?;
    authorize(
        &state,
        &creds,
        &init_pool_action(&registration.mint.to_string()),
        Need::AnyAdmin,
    )
    .await?;
    let reads = state
        .chain
        .send(ReadAccounts {
            keys: vec![registration.pool, registration.mint],
        })
        .await??;
    let register = state
        .ingest
        .registration(&registration, &reads[0], &reads[1])?;
    let registered = commit(&state.writer, &state.cache, register, Reaches::Awaited).await?;
    let created = registered.created.is_some();
    if created {
        // Its positions are read now, not at the next reconciliation (if this
        // replica leads; another leader finds the pool at its next one).
        state.sync.do_send(Reconcile);
    }
    Ok(HttpResponse::Ok().json(InitPoolResponse {
        ok: true,
        pool_address: registration.pool.to_string(),
        created,
        symbol: registered.symbol,
    }))
}

#[utoipa::path(get, path = "/api/pools/status", tag = "pools",
    responses((status = 200, body = PoolStatusResponse, description = "each pool's token (symbol, decimals) and oracle (price, on-chain update time, age, stale) as the health factors use them, by symbol"),
        (status = 503, body = ErrorBody, description = "database unavailable (cache not loaded yet)")))]
pub async fn pool_status(state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    Ok(polls::json_bytes(state.cache.send(PoolStatus).await??))
}

#[utoipa::path(get, path = "/api/pools/{address}/chain", tag = "pools",
    params(("address" = PubkeyText, Path, description = "the pool account")),
    responses((status = 200, body = PoolOnChain, description = "the pool account as read from chain, checked: what POST /api/pools/init sends for it"),
        (status = 400, body = ErrorBody, description = "invalid (a malformed address, or not a LendingPool of the program at its mint's pool address)"),
        (status = 404, body = ErrorBody, description = "pool account not found"),
        (status = 429, body = ErrorBody, description = "rate limited (each call reads the chain)"),
        (status = 502, body = ErrorBody, description = "rpc unavailable")))]
pub async fn pool_on_chain(
    _: PublicWrite,
    state: web::Data<AppState>,
    address: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let pool = parse_pubkey(&address).map_err(|_| ApiError::Invalid)?;
    let reads = state
        .chain
        .send(ReadAccounts { keys: vec![pool] })
        .await??;
    let decoded = state.ingest.pool_on_chain(&pool, &reads[0])?;
    let registered =
        reads::pools::is_registered(&state.store, state.cluster.as_str(), &pool).await?;
    // A convenience: without it the operator gives the signature.
    let init_signature = state
        .chain
        .send(FirstSignature {
            address: pool,
            deadline: Duration::from_millis(state.config.rpc.timeout_ms),
        })
        .await
        .ok()
        .and_then(Result::ok)
        .flatten();
    Ok(HttpResponse::Ok().json(PoolOnChain {
        pool_address: pool.to_string(),
        token_mint: decoded.token_mint.to_string(),
        authority: decoded.authority.to_string(),
        vault: decoded.vault.to_string(),
        pool_bump: decoded.pool_bump,
        authority_bump: decoded.authority_bump,
        vault_bump: decoded.vault_bump,
        registered,
        init_signature,
    }))
}

/// Unregistered pools listed at most.
const MAX_UNREGISTERED: usize = 200;

#[utoipa::path(get, path = "/api/pools/unregistered", tag = "pools",
    responses((status = 200, body = UnregisteredPoolsResponse, description = "the program's LendingPool accounts on chain (at their mint's pool address) that are not in the index, by address: what an operator may register"),
        (status = 429, body = ErrorBody, description = "rate limited (each call reads the chain)"),
        (status = 502, body = ErrorBody, description = "rpc unavailable")))]
pub async fn unregistered_pools(
    _: PublicWrite,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let scan = ScanPools {
        program: state.ingest.program,
        deadline: Duration::from_millis(state.config.rpc.timeout_ms) * 4,
    };
    let (slot, accounts) = state.chain.send(scan).await??;
    let registered = reads::pools::addresses(&state.store, state.cluster.as_str()).await?;
    let mut pools: Vec<UnregisteredPool> = accounts
        .into_iter()
        .filter(|(key, _)| !registered.contains(&key.to_string()))
        .filter_map(|(key, account)| {
            let read = AccountRead {
                slot,
                account: Some(account),
            };
            let pool = state.ingest.pool_on_chain(&key, &read).ok()?;
            Some(UnregisteredPool {
                pool_address: key.to_string(),
                token_mint: pool.token_mint.to_string(),
                authority: pool.authority.to_string(),
                oracle_price: pool.oracle_price.map(|p| p.to_string()),
                oracle_expo: pool.oracle_expo,
            })
        })
        .collect();
    pools.sort_by(|a, b| a.pool_address.cmp(&b.pool_address));
    let truncated = pools.len() > MAX_UNREGISTERED;
    pools.truncate(MAX_UNREGISTERED);
    Ok(HttpResponse::Ok().json(UnregisteredPoolsResponse { pools, truncated }))
}

#[utoipa::path(post, path = "/api/pools/sync", tag = "pools", request_body = SyncPoolRequest,
    responses((status = 200, body = SyncPoolResponse, description = "the pool was read from chain and committed"),
        (status = 400, body = ErrorBody, description = "bad json | pool_address required | bad pubkey: <reason> | invalid"),
        (status = 404, body = ErrorBody, description = "pool account not found (absent on chain, or not registered)"),
        (status = 429, body = ErrorBody, description = "rate limited"),
        (status = 502, body = ErrorBody, description = "rpc unavailable")))]
pub async fn sync_pool(
    _: PublicWrite,
    state: web::Data<AppState>,
    body: JsonBody,
) -> ApiResult<HttpResponse> {
    let (pool, symbol) = SyncPoolRequest::parse(&body)?;
    ensure_registered(&state, &pool).await?;
    let reads = state
        .chain
        .send(ReadAccounts { keys: vec![pool] })
        .await??;
    let sync = state.ingest.pool(&pool, &reads[0], symbol, false)?;
    // Its feed read with it (docs/design.md §17), committed in the same
    // transaction: one change brings both views along.
    let feed = match sync
        .pool
        .pyth_price_feed
        .filter(|_| state.ingest.receiver.is_some())
    {
        Some(feed) => {
            let reads = state
                .chain
                .send(ReadAccounts { keys: vec![feed] })
                .await??;
            state.ingest.feed(&feed, &reads[0], false)
        }
        None => None,
    };
    let writes = std::iter::once(AccountWrite::Pool(sync))
        .chain(feed.map(AccountWrite::Feed))
        .collect();
    commit(
        &state.writer,
        &state.cache,
        SlotWrites { writes },
        Reaches::Awaited,
    )
    .await?;
    Ok(HttpResponse::Ok().json(SyncPoolResponse {
        ok: true,
        pool_address: pool.to_string(),
    }))
}

/// Only registered pools are read from chain (docs/design.md §4.9): any other is 404
/// `pool account not found`, before any RPC.
pub(super) async fn ensure_registered(state: &AppState, pool: &Pubkey) -> ApiResult<()> {
    if reads::pools::is_registered(&state.store, state.cluster.as_str(), pool).await? {
        Ok(())
    } else {
        Err(ApiError::PoolAccountNotFound)
    }
}
