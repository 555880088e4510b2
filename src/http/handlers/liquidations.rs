//! What liquidators act on (docs/design.md §8): a quote per owner under water, and the
//! watch list of owners about to go under. Both are rendered by the health cache
//! once per change and shared by every poller.

use actix_web::{HttpResponse, web};

use crate::error::ApiResult;
use crate::http::conditional::LongPoll;
use crate::http::extract::Params;
use crate::http::polls;
use crate::http::state::AppState;
use crate::http::view_key::ViewParams;
use crate::wire::error::ErrorBody;
use crate::wire::formats::{PubkeyText, WadText};
use crate::wire::liquidations::{AtRiskResponse, LiquidationsResponse};

#[utoipa::path(get, path = "/api/liquidations", tag = "liquidations",
    params(("limit" = Option<i64>, Query, description = "default 50, clamped to 200"),
           ("min_profit_wad" = Option<WadText>, Query, description = "u128 decimal: leave out quotes with a smaller profit_value_wad"),
           ("debt_pool" = Option<PubkeyText>, Query, description = "only pairs repaying debt in this pool"),
           ("collateral_pool" = Option<PubkeyText>, Query, description = "only pairs seizing collateral in this pool"),
           LongPoll, ViewParams),
    responses((status = 200, body = LiquidationsResponse, description = "One quote per owner whose account health factor is below 1 WAD: its most profitable (debt pool, collateral pool) pair, by profit_value_wad descending, then owner.", headers(("ETag" = String, description = "strong tag of the exact body"), ("Cache-Control" = String, description = "no-cache"), ("Lendex-Commitment" = String, description = "the view answered: confirmed or processed"), ("Lendex-Oracle" = String, description = "the price valued at: pool or feed"))),
        (status = 304, description = "not modified: If-None-Match lists the current ETag (no body)", headers(("ETag" = String, description = "the current answer's tag"), ("Lendex-Commitment" = String, description = "the view answered"), ("Lendex-Oracle" = String, description = "the price valued at"))),
        (status = 400, body = ErrorBody, description = "invalid (a malformed pool or min_profit_wad, or wait_ms out of range, or a commitment or oracle not served)"),
        (status = 503, body = ErrorBody, description = "database unavailable (cache not loaded yet)")))]
pub async fn liquidations(state: web::Data<AppState>, params: Params) -> ApiResult<HttpResponse> {
    polls::serve(
        &state,
        params.request(),
        polls::liquidations_answer(params.query())?,
    )
    .await
}

#[utoipa::path(get, path = "/api/positions/at-risk", tag = "liquidations",
    params(("below" = Option<WadText>, Query, description = "u128 decimal, greater than 1 WAD and at most 2 WAD; default 1100000000000000000"),
           ("limit" = Option<i64>, Query, description = "default 50, clamped to 200"),
           LongPoll, ViewParams),
    responses((status = 200, body = AtRiskResponse, description = "Owners with 1 WAD <= account health factor < below, lowest first, then owner.", headers(("ETag" = String, description = "strong tag of the exact body"), ("Cache-Control" = String, description = "no-cache"), ("Lendex-Commitment" = String, description = "the view answered: confirmed or processed"), ("Lendex-Oracle" = String, description = "the price valued at: pool or feed"))),
        (status = 304, description = "not modified: If-None-Match lists the current ETag (no body)", headers(("ETag" = String, description = "the current answer's tag"), ("Lendex-Commitment" = String, description = "the view answered"), ("Lendex-Oracle" = String, description = "the price valued at"))),
        (status = 400, body = ErrorBody, description = "invalid (below malformed or out of range, or wait_ms out of range, or a commitment or oracle not served)"),
        (status = 503, body = ErrorBody, description = "database unavailable (cache not loaded yet)")))]
pub async fn at_risk(state: web::Data<AppState>, params: Params) -> ApiResult<HttpResponse> {
    polls::serve(
        &state,
        params.request(),
        polls::at_risk_answer(params.query())?,
    )
    .await
}
