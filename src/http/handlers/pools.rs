//! Pools: the cached index (spec 4.7), registration by an allowlisted admin
//! (4.8, decisions §5) and the refresh of a registered pool from chain (4.9).

use actix_web::{HttpResponse, web};

use crate::actors::chain_reader::ReadAccounts;
use crate::actors::chain_sync::Reconcile;
use crate::actors::db_writer::write;
use crate::actors::health_cache::after_write;
use crate::db::chain_writes::{RegisterPool, SyncPool};
use crate::db::queries;
use crate::domain::accounts::{check_pool, mint_decimals, pool_address};
use crate::domain::auth_message::init_pool_action;
use crate::domain::pubkey::{Pubkey, parse_pubkey};
use crate::error::{ApiError, ApiResult};
use crate::http::body::JsonBody;
use crate::http::extract::PublicWrite;
use crate::http::registered::ensure_registered;
use crate::http::signed::{Credentials, Need, authorize, credentials};
use crate::http::state::AppState;
use crate::wire::error::ErrorBody;
use crate::wire::pools::{
    InitPoolRequest, InitPoolResponse, Pool, PoolsResponse, SyncPoolRequest, SyncPoolResponse,
};

/// A pool registration as the handler needs it.
pub struct InitPoolCall<'a> {
    pub creds: Credentials<'a>,
    pub actor: Pubkey,
    pub pool: Pubkey,
    pub mint: Pubkey,
    pub authority: Pubkey,
    pub vault: Pubkey,
    /// (pool, authority, vault)
    pub bumps: (u8, u8, u8),
    pub symbol: Option<&'a str>,
    pub init_signature: &'a str,
}

impl InitPoolRequest {
    /// Spec 4.8's `missing fields` first, then `invalid` for anything malformed,
    /// all before any nonce is spent.
    pub fn parse(body: &JsonBody) -> ApiResult<InitPoolCall<'_>> {
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
        let bumps = (pool_bump, authority_bump, vault_bump);
        Ok(InitPoolCall {
            actor: actor_key,
            pool: pool_key,
            mint: mint_key,
            authority: authority_key,
            vault: vault_key,
            bumps,
            symbol,
            init_signature,
            creds,
        })
    }
}

impl SyncPoolRequest {
    /// Spec 4.9's `pool_address required` and `bad pubkey: <reason>`, then an
    /// over-long symbol is `invalid`. Returns (pool, symbol).
    pub fn parse(body: &JsonBody) -> ApiResult<(Pubkey, Option<&str>)> {
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
    responses((status = 200, body = PoolsResponse, description = "registered pools of the cluster")))]
pub async fn list_pools(state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let client = state.db.get().await?;
    let stmt = client.prepare_cached(queries::LIST_POOLS).await?;
    let rows = client.query(&stmt, &[&state.cluster.as_str()]).await?;
    let pools = rows.iter().map(Pool::from_row).collect();
    Ok(HttpResponse::Ok().json(PoolsResponse { pools }))
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
    let call = InitPoolRequest::parse(&body)?;
    let pool_addr = call.pool.to_string();
    authorize(
        &state,
        &call.creds,
        &init_pool_action(&call.mint.to_string()),
        Need::AnyAdmin,
    )
    .await?;

    let reads = state
        .chain
        .send(ReadAccounts {
            keys: vec![call.pool, call.mint],
        })
        .await
        .map_err(|_| ApiError::Internal)??;
    let pool = check_pool(&state.program_id, reads[0].parts())?;
    if pool.token_mint != call.mint || pool_address(&state.program_id, &call.mint).0 != call.pool {
        return Err(ApiError::Invalid);
    }
    // Only the pool's on-chain authority may list it.
    if pool.authority != call.actor {
        return Err(ApiError::NotAuthorized);
    }
    if pool.authority != call.authority
        || pool.vault != call.vault
        || (pool.pool_bump, pool.authority_bump, pool.vault_bump) != call.bumps
    {
        return Err(ApiError::Invalid);
    }
    let decimals = reads[1]
        .account
        .as_ref()
        .and_then(|mint| mint_decimals(&mint.owner, &mint.data))
        .ok_or(ApiError::Invalid)?;

    let created = write(
        &state.writer,
        RegisterPool {
            cluster: state.cluster.as_str(),
            pool_address: pool_addr.clone(),
            pool,
            slot: reads[0].slot,
            symbol: call.symbol.map(str::to_string),
            decimals,
            created_by: call.creds.actor.to_string(),
            init_signature: call.init_signature.to_string(),
        },
    )
    .await?;
    after_write(&state.cache, Vec::new(), vec![call.pool]).await;
    if created {
        // Its positions are read now, not at the next reconciliation (if this
        // replica leads; another leader finds the pool at its next one).
        state.sync.do_send(Reconcile);
    }
    Ok(HttpResponse::Ok().json(InitPoolResponse {
        ok: true,
        pool_address: pool_addr,
        created,
    }))
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
    let (pool_key, symbol) = SyncPoolRequest::parse(&body)?;
    let pool_addr = pool_key.to_string();
    ensure_registered(&state, &pool_addr).await?;
    let reads = state
        .chain
        .send(ReadAccounts {
            keys: vec![pool_key],
        })
        .await
        .map_err(|_| ApiError::Internal)??;
    let pool = check_pool(&state.program_id, reads[0].parts())?;
    write(
        &state.writer,
        SyncPool {
            cluster: state.cluster.as_str(),
            pool_address: pool_addr.to_string(),
            pool,
            slot: reads[0].slot,
            symbol: symbol.map(str::to_string),
            catch_up: false,
        },
    )
    .await?;
    after_write(&state.cache, Vec::new(), vec![pool_key]).await;
    Ok(HttpResponse::Ok().json(SyncPoolResponse {
        ok: true,
        pool_address: pool_addr.to_string(),
    }))
}
