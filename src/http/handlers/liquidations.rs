//! What liquidators act on (decisions §8): a quote per owner under water, and the
//! watch list of owners about to go under. Both are rendered by the health cache
//! once per change and shared by every poller.

use actix_web::{HttpResponse, web};

use crate::domain::enums::parse_u128_decimal;
use crate::domain::limits::clamp_limit;
use crate::domain::wad::WAD;
use crate::engine::WATCH_BELOW;
use crate::engine::answers::Answer;
use crate::engine::quotes::QuoteFilter;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::Params;
use crate::http::query::Query;
use crate::http::rendered::serve_answer;
use crate::http::state::AppState;
use crate::wire::error::ErrorBody;
use crate::wire::formats::{PubkeyText, WadText};
use crate::wire::liquidations::{AtRiskResponse, LiquidationsResponse};

/// The at-risk list's default upper bound: 1.1 WAD.
const DEFAULT_BELOW: u128 = WAD + WAD / 10;

#[utoipa::path(get, path = "/api/liquidations", tag = "liquidations",
    params(("limit" = Option<i64>, Query, description = "default 50, clamped to 200"),
           ("min_profit_wad" = Option<WadText>, Query, description = "u128 decimal: leave out quotes with a smaller profit_value_wad"),
           ("debt_pool" = Option<PubkeyText>, Query, description = "only pairs repaying debt in this pool"),
           ("collateral_pool" = Option<PubkeyText>, Query, description = "only pairs seizing collateral in this pool")),
    responses((status = 200, body = LiquidationsResponse, description = "One quote per owner whose account health factor is below 1 WAD: its most profitable (debt pool, collateral pool) pair, by profit_value_wad descending, then owner."),
        (status = 400, body = ErrorBody, description = "invalid (a malformed pool or min_profit_wad)"),
        (status = 503, body = ErrorBody, description = "database unavailable (cache not loaded yet)")))]
pub async fn liquidations(state: web::Data<AppState>, params: Params) -> ApiResult<HttpResponse> {
    serve_answer(&state, liquidations_answer(params.query())?).await
}

/// The answer GET /api/liquidations asks for (also read by `hot_reads`).
pub fn liquidations_answer(query: Query) -> ApiResult<Answer> {
    let min_profit_wad = match query.get("min_profit_wad") {
        None => 0,
        Some(v) => parse_u128_decimal(&v).ok_or(ApiError::Invalid)?,
    };
    Ok(Answer::Liquidations(QuoteFilter {
        debt_pool: query.key("debt_pool")?,
        collateral_pool: query.key("collateral_pool")?,
        min_profit_wad,
        limit: clamp_limit(query.get("limit").as_deref()) as usize,
    }))
}

#[utoipa::path(get, path = "/api/positions/at-risk", tag = "liquidations",
    params(("below" = Option<WadText>, Query, description = "u128 decimal, greater than 1 WAD and at most 2 WAD; default 1100000000000000000"),
           ("limit" = Option<i64>, Query, description = "default 50, clamped to 200")),
    responses((status = 200, body = AtRiskResponse, description = "Owners with 1 WAD <= account health factor < below, lowest first, then owner."),
        (status = 400, body = ErrorBody, description = "invalid (below malformed or out of range)"),
        (status = 503, body = ErrorBody, description = "database unavailable (cache not loaded yet)")))]
pub async fn at_risk(state: web::Data<AppState>, params: Params) -> ApiResult<HttpResponse> {
    serve_answer(&state, at_risk_answer(params.query())?).await
}

/// The answer GET /api/positions/at-risk asks for (also read by `hot_reads`).
pub fn at_risk_answer(query: Query) -> ApiResult<Answer> {
    let below = match query.get("below") {
        None => DEFAULT_BELOW,
        Some(v) => parse_u128_decimal(&v)
            .filter(|b| *b > WAD && *b <= WATCH_BELOW)
            .ok_or(ApiError::Invalid)?,
    };
    let limit = clamp_limit(query.get("limit").as_deref()) as usize;
    Ok(Answer::AtRisk { below, limit })
}
