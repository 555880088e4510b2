//! History reads (docs/design.md §12): an owner's health over time, the events of
//! accounts, a pool's prices and the market, from PostgreSQL. Each answer
//! carries its strong ETag (a conditional GET gets 304), `retention_start`,
//! and a cursor when the listing goes on.

use actix_web::{HttpRequest, HttpResponse, web};
use bytes::Bytes;
use chrono::{NaiveTime, Utc};

use crate::domain::history::buckets::MarketPoint;
use crate::domain::history::{EventKind, Resolution, keep_from};
use crate::domain::pubkey::parse_pubkey;
use crate::error::{ApiError, ApiResult};
use crate::http::conditional::respond_once;
use crate::http::extract::Params;
use crate::http::history_params::{Listing, Window, window};
use crate::http::state::AppState;
use crate::serve::poll_answers::{Body, now_micros};
use crate::store::history::read::{self, EventFilter, EventRow, PriceRow};
use crate::wire::error::ErrorBody;
use crate::wire::formats::CursorText;
use crate::wire::formats::{
    HistoryEventKindName, PubkeyText, ResolutionName, TimeParam, time_text,
};
use crate::wire::history::{
    HealthBucketWire, HealthPointWire, HistoryEventWire, HistoryEventsResponse, MarketBucketWire,
    MarketHistoryEntry, MarketHistoryResponse, MarketPointWire, OwnerHistoryEntry,
    OwnerHistoryResponse, PriceWire, PricesResponse,
};

/// The start (UTC midnight) of the oldest day kept: stable within a day.
fn retention_start(state: &AppState) -> String {
    let today = Utc::now().date_naive();
    let first = keep_from(today, state.config.history.retention_days);
    time_text(first.and_time(NaiveTime::MIN).and_utc().timestamp_micros())
}

/// The answer's JSON, as a conditional GET.
fn answer(req: &HttpRequest, value: &impl serde::Serialize) -> ApiResult<HttpResponse> {
    let bytes = serde_json::to_vec(value).map_err(ApiError::internal)?;
    Ok(respond_once(req.headers(), &Body::new(Bytes::from(bytes))))
}

/// Whether anything is kept at all (`history.retention_days` 0 turns history off).
fn kept(state: &AppState) -> bool {
    state.config.history.enabled()
}

/// The rows of a page of `limit` read as `limit + 1`: the page, and whether more follow.
fn page<T>(mut rows: Vec<T>, limit: i64) -> (Vec<T>, bool) {
    let more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    (rows, more)
}

/// The page's range as the API writes it.
fn span(w: &Window) -> (String, String) {
    (time_text(w.from_us), time_text(w.to_us))
}

#[utoipa::path(get, path = "/api/positions/{user}/history", tag = "history",
    params(("user" = PubkeyText, Path, description = "wallet"),
           ("from" = Option<TimeParam>, Query, description = "start of the range (inclusive)"),
           ("to" = Option<TimeParam>, Query, description = "end of the range (exclusive)"),
           ("resolution" = Option<ResolutionName>, Query, description = "raw (default) or buckets: 1m, 5m, 1h, 1d"),
           ("limit" = Option<i64>, Query, minimum = 1, description = "points or buckets per page (at most 5000; more is clamped)"),
           ("cursor" = Option<CursorText>, Query, description = "next_cursor of the previous page"),
           ("If-None-Match" = Option<String>, Header, description = "ETags held: a match is 304")),
    responses((status = 200, body = OwnerHistoryResponse, description = "The wallet's recorded health points (or buckets of them), oldest first, and the last point before `from`. A wallet with no history has none.", headers(("ETag" = String, description = "strong tag of the exact body"))),
        (status = 304, description = "not modified: If-None-Match lists the current ETag"),
        (status = 400, body = ErrorBody, description = "invalid (a malformed wallet, time, resolution, limit or cursor; from not before to; a raw range over 31 days)"),
        (status = 503, body = ErrorBody, description = "database unavailable")))]
pub async fn owner_history(
    req: HttpRequest,
    state: web::Data<AppState>,
    user: web::Path<String>,
    params: Params,
) -> ApiResult<HttpResponse> {
    let owner = parse_pubkey(&user).map_err(|_| ApiError::Invalid)?;
    let w = window(params.query(), Listing::OwnerPoints, now_micros())?;
    let (from, to) = span(&w);
    let mut out = OwnerHistoryResponse {
        owner: owner.to_string(),
        from,
        to,
        resolution: w.resolution.as_str().into(),
        retention_start: retention_start(&state),
        initial: None,
        points: Vec::new(),
        next_cursor: None,
    };
    if !kept(&state) {
        return answer(&req, &out);
    }
    let session = state.store.session().await?;
    let cluster = state.cluster.as_str();
    let Some(id) = read::owner_id(&session, cluster, &out.owner).await? else {
        return answer(&req, &out);
    };
    // The line's start and the page, asked at once (one connection pipelines them).
    let initial = read::point_before(&session, id, w.from_us);
    match w.resolution.width_us() {
        None => {
            let page_rows = read::points(&session, id, w.page_from(), w.to_us, w.limit + 1);
            let (initial, rows) = futures_util::try_join!(initial, page_rows)?;
            out.initial = initial.as_ref().map(HealthPointWire::from);
            let (rows, more) = page(rows, w.limit);
            if more && let Some(last) = rows.last() {
                out.next_cursor = Some(w.next(Listing::OwnerPoints, last.at_us + 1));
            }
            out.points = rows
                .iter()
                .map(|p| OwnerHistoryEntry::Point(p.into()))
                .collect();
        }
        Some(width) => {
            let limit = w.limit as usize;
            let buckets = read::point_buckets(
                &session,
                id,
                w.resolution,
                w.page_from(),
                w.to_us,
                limit + 1,
            );
            let (initial, buckets) = futures_util::try_join!(initial, buckets)?;
            out.initial = initial.as_ref().map(HealthPointWire::from);
            let (buckets, more) = page(buckets, w.limit);
            if more && let Some(last) = buckets.last() {
                out.next_cursor = Some(w.next(Listing::OwnerPoints, last.start_us + width));
            }
            out.points = buckets
                .iter()
                .map(|b| OwnerHistoryEntry::Bucket(HealthBucketWire::from(b)))
                .collect();
        }
    }
    answer(&req, &out)
}

#[utoipa::path(get, path = "/api/history/events", tag = "history",
    params(("kind" = Option<HistoryEventKindName>, Query, description = "only events of this kind"),
           ("owner" = Option<PubkeyText>, Query, description = "only this wallet's"),
           ("pool" = Option<PubkeyText>, Query, description = "only events of this pool: a liquidation's debt or collateral pool, or for the other kinds any pool the owner held"),
           ("from" = Option<TimeParam>, Query, description = "start of the range (inclusive)"),
           ("to" = Option<TimeParam>, Query, description = "end of the range (exclusive)"),
           ("limit" = Option<i64>, Query, minimum = 1, description = "events per page (at most 5000; more is clamped)"),
           ("cursor" = Option<CursorText>, Query, description = "next_cursor of the previous page"),
           ("If-None-Match" = Option<String>, Header, description = "ETags held: a match is 304")),
    responses((status = 200, body = HistoryEventsResponse, description = "Accounts that went under water, recovered, were liquidated (inferred) or left bad debt, newest first.", headers(("ETag" = String, description = "strong tag of the exact body"))),
        (status = 304, description = "not modified: If-None-Match lists the current ETag"),
        (status = 400, body = ErrorBody, description = "invalid (a malformed kind, wallet, pool, time, limit or cursor; from not before to; a range over 31 days)"),
        (status = 503, body = ErrorBody, description = "database unavailable")))]
pub async fn events(
    req: HttpRequest,
    state: web::Data<AppState>,
    params: Params,
) -> ApiResult<HttpResponse> {
    let query = params.query();
    let kind = query
        .get("kind")
        .map(|k| EventKind::parse(&k).ok_or(ApiError::Invalid))
        .transpose()?;
    let owner = query.key("owner")?;
    let pool = query.key("pool")?;
    let w = window(query, Listing::Events, now_micros())?;
    let mut out = HistoryEventsResponse {
        retention_start: retention_start(&state),
        events: Vec::new(),
        next_cursor: None,
    };
    if !kept(&state) {
        return answer(&req, &out);
    }
    let session = state.store.session().await?;
    let cluster = state.cluster.as_str();
    let mut filter = EventFilter {
        kind,
        ..EventFilter::default()
    };
    // A wallet or pool with no history has no event.
    if let Some(owner) = owner {
        match read::owner_id(&session, cluster, &owner.to_string()).await? {
            Some(id) => filter.owner = Some(id),
            None => return answer(&req, &out),
        }
    }
    if let Some(pool) = pool {
        match read::pool_id(&session, cluster, &pool.to_string()).await? {
            Some(id) => filter.pool = Some(id),
            None => return answer(&req, &out),
        }
    }
    let below = w.cursor.map_or(i64::MAX, |c| c.next);
    let rows = read::events(
        &session,
        cluster,
        filter,
        w.from_us,
        w.to_us,
        below,
        w.limit + 1,
    )
    .await?;
    let (rows, more) = page(rows, w.limit);
    if more && let Some(last) = rows.last() {
        out.next_cursor = Some(w.next(Listing::Events, last.id));
    }
    out.events = rows.into_iter().map(event_wire).collect();
    answer(&req, &out)
}

fn event_wire(e: EventRow) -> HistoryEventWire {
    HistoryEventWire {
        id: e.id,
        kind: e.kind.as_str().into(),
        owner: e.owner,
        at: time_text(e.at_us),
        slot: e.slot,
        health_factor_before_wad: e.health_factor_before.to_string(),
        health_factor_after_wad: e.health_factor_after.to_string(),
        debt_pool: e.debt_pool,
        repaid: e.repaid.map(|r| r.to_string()),
        collateral_pool: e.collateral_pool,
        seized: e.seized.map(|s| s.to_string()),
    }
}

#[utoipa::path(get, path = "/api/pools/{pool}/prices", tag = "history",
    params(("pool" = PubkeyText, Path, description = "a pool in the index"),
           ("from" = Option<TimeParam>, Query, description = "start of the range (inclusive)"),
           ("to" = Option<TimeParam>, Query, description = "end of the range (exclusive)"),
           ("limit" = Option<i64>, Query, minimum = 1, description = "rows per page (at most 5000; more is clamped)"),
           ("cursor" = Option<CursorText>, Query, description = "next_cursor of the previous page"),
           ("If-None-Match" = Option<String>, Header, description = "ETags held: a match is 304")),
    responses((status = 200, body = PricesResponse, description = "Each change of the pool's oracle price, confidence or exponent, oldest first; its registration is the first.", headers(("ETag" = String, description = "strong tag of the exact body"))),
        (status = 304, description = "not modified: If-None-Match lists the current ETag"),
        (status = 400, body = ErrorBody, description = "invalid (a malformed pool, time, limit or cursor; from not before to; a range over 31 days)"),
        (status = 404, body = ErrorBody, description = "not found (a pool not in the index)"),
        (status = 503, body = ErrorBody, description = "database unavailable")))]
pub async fn prices(
    req: HttpRequest,
    state: web::Data<AppState>,
    pool: web::Path<String>,
    params: Params,
) -> ApiResult<HttpResponse> {
    let pool = parse_pubkey(&pool).map_err(|_| ApiError::Invalid)?;
    let w = window(params.query(), Listing::Prices, now_micros())?;
    let cluster = state.cluster.as_str();
    if !crate::store::reads::pools::is_registered(&state.store, cluster, &pool).await? {
        return Err(ApiError::NotFound);
    }
    let mut out = PricesResponse {
        pool: pool.to_string(),
        retention_start: retention_start(&state),
        prices: Vec::new(),
        next_cursor: None,
    };
    if !kept(&state) {
        return answer(&req, &out);
    }
    let session = state.store.session().await?;
    let Some(id) = read::pool_id(&session, cluster, &out.pool).await? else {
        return answer(&req, &out);
    };
    let rows = read::prices(&session, id, w.page_from(), w.to_us, w.limit + 1).await?;
    let (rows, more) = page(rows, w.limit);
    if more && let Some(last) = rows.last() {
        out.next_cursor = Some(w.next(Listing::Prices, last.at_us + 1));
    }
    out.prices = rows.iter().map(price_wire).collect();
    answer(&req, &out)
}

fn price_wire(p: &PriceRow) -> PriceWire {
    PriceWire {
        at: time_text(p.at_us),
        slot: p.slot,
        price: p.price.map(|v| v.to_string()),
        conf: p.conf.map(|v| v.to_string()),
        expo: p.expo,
        source: p.source.as_str().into(),
    }
}

#[utoipa::path(get, path = "/api/history/market", tag = "history",
    params(("from" = Option<TimeParam>, Query, description = "start of the range (inclusive)"),
           ("to" = Option<TimeParam>, Query, description = "end of the range (exclusive)"),
           ("resolution" = Option<ResolutionName>, Query, description = "raw samples (default) or buckets: 1m, 5m, 1h, 1d"),
           ("limit" = Option<i64>, Query, minimum = 1, description = "samples or buckets per page (at most 5000; more is clamped)"),
           ("cursor" = Option<CursorText>, Query, description = "next_cursor of the previous page"),
           ("If-None-Match" = Option<String>, Header, description = "ETags held: a match is 304")),
    responses((status = 200, body = MarketHistoryResponse, description = "The market sampled every history.market_interval_seconds: owners, under water, at risk, debt under water and bad debt, oldest first.", headers(("ETag" = String, description = "strong tag of the exact body"))),
        (status = 304, description = "not modified: If-None-Match lists the current ETag"),
        (status = 400, body = ErrorBody, description = "invalid (a malformed time, resolution, limit or cursor; from not before to; a raw range over 31 days)"),
        (status = 503, body = ErrorBody, description = "database unavailable")))]
pub async fn market(
    req: HttpRequest,
    state: web::Data<AppState>,
    params: Params,
) -> ApiResult<HttpResponse> {
    let w = window(params.query(), Listing::Market, now_micros())?;
    let (from, to) = span(&w);
    let mut out = MarketHistoryResponse {
        from,
        to,
        resolution: w.resolution.as_str().into(),
        retention_start: retention_start(&state),
        initial: None,
        points: Vec::new(),
        next_cursor: None,
    };
    if !kept(&state) {
        return answer(&req, &out);
    }
    let session = state.store.session().await?;
    let cluster = state.cluster.as_str();
    let initial = read::market_before(&session, cluster, w.from_us);
    match w.resolution {
        Resolution::Raw => {
            let rows = read::market(&session, cluster, w.page_from(), w.to_us, w.limit + 1);
            let (initial, rows): (_, Vec<MarketPoint>) = futures_util::try_join!(initial, rows)?;
            out.initial = initial.as_ref().map(MarketPointWire::from);
            let (rows, more) = page(rows, w.limit);
            if more && let Some(last) = rows.last() {
                out.next_cursor = Some(w.next(Listing::Market, last.at_us + 1));
            }
            out.points = rows
                .iter()
                .map(|p| MarketHistoryEntry::Point(p.into()))
                .collect();
        }
        resolution => {
            let width = resolution.width_us().expect("buckets have a width");
            let rows = read::market_buckets(
                &session,
                cluster,
                resolution,
                w.page_from(),
                w.to_us,
                w.limit + 1,
            );
            let (initial, rows) = futures_util::try_join!(initial, rows)?;
            out.initial = initial.as_ref().map(MarketPointWire::from);
            let (rows, more) = page(rows, w.limit);
            if more && let Some(last) = rows.last() {
                out.next_cursor = Some(w.next(Listing::Market, last.start_us + width));
            }
            out.points = rows
                .iter()
                .map(|b| MarketHistoryEntry::Bucket(MarketBucketWire::from(b)))
                .collect();
        }
    }
    answer(&req, &out)
}
