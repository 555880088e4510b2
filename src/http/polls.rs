//! The liquidators' polls: GET /api/positions/unhealthy, /api/liquidations and
//! /api/positions/at-risk, answered from the health cache's rendered answers,
//! and a wallet's /api/positions/{user} and .../detail, from its kept body.
//!
//! `POLLS` is the one table of these routes: each pattern (also the metrics
//! label and the App's route, see `http::routes`) with the parser of its query
//! into the `Answer` it asks for. A GET whose answer is already rendered for
//! this second is served by `answer` from those shared bytes ahead of the App,
//! with no routing, extractors or handler futures: what is left per request is
//! the HTTP stack (what the hello-world baseline measures). IndexSnapshot else (a
//! miss, HEAD, another spelling of the path, a parameter the parser refuses)
//! goes on to the App, whose handlers parse the query the same way, `serve`
//! the same bytes (the cache renders on a miss), and answer every error.

use std::time::Duration;

use actix_http::body::BoxBody;
use actix_http::{HttpMessage, Method, Request, Response};
use actix_web::http::header::{CONTENT_TYPE, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};

use super::conditional::{self, Conditional};
use super::observe::{Answered, Observed};
use super::query::Query;
use super::single_flight::{self, Key};
use super::state::AppState;
use super::view_key::{self, RenderedViews};
use crate::actors::health_cache::Render;
use crate::domain::enums::parse_u128_decimal;
use crate::domain::limits::clamp_limit;
use crate::domain::pubkey::{Pubkey, parse_pubkey};
use crate::domain::wad::WAD;
use crate::engine::WATCH_BELOW;
use crate::engine::quotes::QuoteFilter;
use crate::error::{ApiError, ApiResult};
use crate::serve::poll_answers::{Changes, OwnerBody, now_seconds};
use crate::serve::render::Answer;

pub const UNHEALTHY: &str = "/api/positions/unhealthy";
pub const LIQUIDATIONS: &str = "/api/liquidations";
pub const AT_RISK: &str = "/api/positions/at-risk";
/// A wallet's positions and their detail: rendered per owner, served ahead
/// of the App as the polls are when the body is kept.
pub const OWNER_POSITIONS: &str = "/api/positions/{user}";
pub const OWNER_DETAIL: &str = "/api/positions/{user}/detail";

/// A poll's route and the parser of its query.
pub struct Poll {
    pub route: &'static str,
    pub parse: fn(Query) -> ApiResult<Answer>,
}

/// Every poll served from the rendered answers.
pub const POLLS: [Poll; 3] = [
    Poll {
        route: UNHEALTHY,
        parse: unhealthy_answer,
    },
    Poll {
        route: LIQUIDATIONS,
        parse: liquidations_answer,
    },
    Poll {
        route: AT_RISK,
        parse: at_risk_answer,
    },
];

/// The answer GET /api/positions/unhealthy asks for.
pub fn unhealthy_answer(query: Query) -> ApiResult<Answer> {
    let pool = query.key("pool")?;
    let limit = clamp_limit(query.get("limit").as_deref()) as usize;
    Ok(Answer::Unhealthy { pool, limit })
}

/// The answer GET /api/liquidations asks for.
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

/// The at-risk list's default upper bound: 1.1 WAD.
const DEFAULT_BELOW: u128 = WAD + WAD / 10;

/// The answer GET /api/positions/at-risk asks for: `below` above 1 WAD and
/// within the engine's watch band.
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

/// The routes machines poll: docs/design.md §11's six, the history reads, health
/// (start scripts, the balancer) and the metrics (scrapers). Their
/// successful, timely reads are logged at DEBUG (`observe`).
pub const POLLED: [&str; 12] = [
    UNHEALTHY,
    LIQUIDATIONS,
    AT_RISK,
    OWNER_POSITIONS,
    OWNER_DETAIL,
    "/api/pools",
    "/api/positions/{user}/history",
    "/api/history/events",
    "/api/history/market",
    "/api/pools/{pool}/prices",
    "/api/health",
    "/metrics",
];

/// Whether `route` (a route's pattern) is one machines poll.
pub fn is_polled(route: &str) -> bool {
    POLLED.contains(&route)
}

/// The answer to `req` when it is one of the polls and already rendered (a
/// 200, or a 304 for a client that holds it); None sends the request on to
/// the App, which also holds a long poll.
pub fn answer(
    views: &RenderedViews,
    req: &Request,
    slow_after: Duration,
) -> Option<Response<BoxBody>> {
    if req.method() != Method::GET {
        return None;
    }
    let observed = Observed::start();
    let query = Query(req.uri().query().unwrap_or_default()).check().ok()?;
    let cond = Conditional::of(req.headers(), query).ok()?;
    let (view, rendered) = views.requested(query).ok()?;
    let (route, body) = match POLLS.iter().find(|poll| poll.route == req.path()) {
        Some(poll) => {
            let answer = (poll.parse)(query).ok()?;
            (poll.route, rendered.answer(&answer, now_seconds())?)
        }
        None => {
            let (owner, kind, route) = owner_route(req.path())?;
            (route, rendered.owner_body(&owner, kind)?)
        }
    };
    if cond.would_wait(&body) {
        return None;
    }
    let response = view_key::stamp(cond.respond(&body), view);
    observed.finish(
        Answered {
            route,
            polled: true,
            method: req.method(),
            path: req.path(),
            // Answered at once: it was not held, whatever it asked.
            held: false,
            status: response.status().as_u16(),
        },
        slow_after,
    );
    Some(response.into())
}

/// The wallet, body and route pattern of a path the App would route to
/// `OWNER_POSITIONS` or `OWNER_DETAIL`; None for any other path, and for a
/// wallet that is not a plain base58 key (the App answers those).
pub fn owner_route(path: &str) -> Option<(Pubkey, OwnerBody, &'static str)> {
    let rest = path.strip_prefix("/api/positions/")?;
    let (user, kind, route) = match rest.strip_suffix("/detail") {
        Some(user) => (user, OwnerBody::Detail, OWNER_DETAIL),
        None => (rest, OwnerBody::Positions, OWNER_POSITIONS),
    };
    if user.contains('/') {
        return None;
    }
    Some((parse_pubkey(user).ok()?, kind, route))
}

/// The App's side: the rendered answer (or the cache renders it now), under
/// the request's conditions (`http::conditional`).
pub async fn serve(
    state: &web::Data<AppState>,
    req: &HttpRequest,
    answer: Answer,
) -> ApiResult<HttpResponse> {
    let query = Query(req.query_string());
    let (view, rendered) = state.views.requested(query)?;
    let cond = Conditional::of(req.headers(), query)?;
    let answered = conditional::answer(state, (rendered, Changes::Polls), cond, || async move {
        if let Some(body) = rendered.answer(&answer, now_seconds()) {
            return Ok(body);
        }
        // Held polls woken together ask the cache once per worker.
        let cache = state.cache.clone();
        single_flight::once(Key::Poll(answer, view), move || async move {
            Ok(cache.send(Render(answer, view)).await??)
        })
        .await
    })
    .await?;
    Ok(view_key::stamp(answered, view))
}

/// A 200 with an already rendered JSON body.
pub fn json_bytes(body: actix_web::web::Bytes) -> HttpResponse {
    // A static header value: nothing parsed or copied per answer.
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, HeaderValue::from_static("application/json")))
        .body(body)
}

#[cfg(test)]
mod tests {
    use actix_http::test::TestRequest;
    use actix_web::web::Bytes;

    use super::*;
    use crate::domain::view_key::ViewKey;
    use crate::serve::poll_answers::SharedRendered;

    #[test]
    fn owner_routes_are_told_from_the_other_positions_paths() {
        let key = Pubkey::new_unique();
        assert_eq!(
            owner_route(&format!("/api/positions/{key}")),
            Some((key, OwnerBody::Positions, OWNER_POSITIONS))
        );
        assert_eq!(
            owner_route(&format!("/api/positions/{key}/detail")),
            Some((key, OwnerBody::Detail, OWNER_DETAIL))
        );
        for other in [
            "/api/positions/unhealthy".to_string(),
            "/api/positions/at-risk".to_string(),
            "/api/positions/sync".to_string(),
            format!("/api/positions/{key}/history"),
            format!("/api/positions/{key}/detail/x"),
            format!("/api/positions/{key}/"),
            "/api/positions/".to_string(),
            format!("/api/pools/{key}"),
        ] {
            assert_eq!(owner_route(&other), None, "{other}");
        }
    }

    use crate::serve::poll_answers::Body;

    const BODY: &[u8] = br#"{"positions":[]}"#;
    const SLOW: Duration = Duration::from_millis(100);

    fn rendered_for(answer: Answer, second: i64) -> RenderedViews {
        let rendered = SharedRendered::default();
        rendered.keep_answer(answer, second, Body::new(Bytes::from_static(BODY)));
        RenderedViews {
            confirmed: rendered,
            ..RenderedViews::default()
        }
    }

    /// Runs `check` with the current second, again if the clock moved on to the
    /// next second meanwhile (answers are kept for one second).
    fn within_one_second<T>(check: impl Fn(i64) -> T) -> T {
        loop {
            let now = now_seconds();
            let out = check(now);
            if now_seconds() == now {
                return out;
            }
        }
    }

    fn get(uri: &str) -> Request {
        TestRequest::with_uri(uri).finish()
    }

    #[actix_rt::test]
    async fn a_rendered_poll_is_answered_with_the_handlers_bytes() {
        let (rendered, response) = within_one_second(|now| {
            let rendered = rendered_for(unhealthy_answer(Query("limit=7")).unwrap(), now);
            let response = answer(&rendered, &get("/api/positions/unhealthy?limit=7"), SLOW);
            let again = answer(
                &rendered,
                &get("/api/positions/unhealthy?limit=1&limit=7"),
                SLOW,
            );
            (again.is_some(), response)
        });
        // A repeated parameter: the last one counts, as in the handler.
        assert!(rendered, "the last `limit` is the one read");
        let response = response.expect("rendered for this second");
        // The same response the handler builds.
        let handlers = conditional::ok(&Body::new(Bytes::from_static(BODY)));
        let expected: Response<BoxBody> = view_key::stamp(handlers, ViewKey::CONFIRMED).into();
        assert_eq!(response.status(), expected.status());
        let sorted = |r: &Response<BoxBody>| {
            let mut headers: Vec<(String, Vec<u8>)> = r
                .headers()
                .iter()
                .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
                .collect();
            headers.sort();
            headers
        };
        assert_eq!(sorted(&response), sorted(&expected));
        let body = actix_http::body::to_bytes(response.into_body())
            .await
            .unwrap();
        assert_eq!(&body[..], BODY);
    }

    #[test]
    fn a_held_tag_is_304_ahead_of_the_app_and_a_long_poll_goes_on() {
        let tag = Body::new(Bytes::from_static(BODY)).etag;
        let with_tag = |uri: &str| {
            TestRequest::with_uri(uri)
                .insert_header((actix_web::http::header::IF_NONE_MATCH, tag.to_vec()))
                .finish()
        };
        let (not_modified, held, bad_wait) = within_one_second(|now| {
            let rendered = rendered_for(unhealthy_answer(Query("")).unwrap(), now);
            (
                answer(&rendered, &with_tag("/api/positions/unhealthy"), SLOW).map(|r| r.status()),
                answer(
                    &rendered,
                    &with_tag("/api/positions/unhealthy?wait_ms=500"),
                    SLOW,
                )
                .is_none(),
                answer(
                    &rendered,
                    &with_tag("/api/positions/unhealthy?wait_ms=x"),
                    SLOW,
                )
                .is_none(),
            )
        });
        assert_eq!(not_modified, Some(actix_http::StatusCode::NOT_MODIFIED));
        assert!(held, "a long poll is held by the App's handler");
        assert!(bad_wait, "a malformed wait_ms is the App's 400");
    }

    #[test]
    fn anything_else_goes_on_to_the_app() {
        let now = now_seconds();
        let rendered = rendered_for(unhealthy_answer(Query("")).unwrap(), now);
        let served = within_one_second(|now| {
            let rendered = rendered_for(unhealthy_answer(Query("")).unwrap(), now);
            answer(&rendered, &get("/api/positions/unhealthy"), SLOW).is_some()
        });
        assert!(served, "the rendered answer itself is served");
        let head = TestRequest::with_uri("/api/positions/unhealthy")
            .method(Method::HEAD)
            .finish();
        for req in [
            head,
            // Not rendered: another answer, the other routes.
            get("/api/positions/unhealthy?limit=3"),
            get("/api/liquidations"),
            get("/api/positions/at-risk"),
            // Refused by the handler's parser: the App gives the 400.
            get("/api/positions/unhealthy?pool=not-a-key"),
            get("/api/positions/unhealthy?limit=%00"),
            // Other spellings of the path are the App's to route.
            get("/api/positions/unhealthy/"),
            get("/api/positions/%75nhealthy"),
            get("/api/positions/unhealthy/stream"),
        ] {
            assert!(answer(&rendered, &req, SLOW).is_none(), "{:?}", req.uri());
        }
        // Rendered in an earlier second: stale for oracle ages, so not served.
        let old = rendered_for(unhealthy_answer(Query("")).unwrap(), now - 1);
        assert!(answer(&old, &get("/api/positions/unhealthy"), SLOW).is_none());
    }

    #[test]
    fn each_route_reads_its_own_answer() {
        let now = now_seconds();
        let liquidations = liquidations_answer(Query("limit=5")).unwrap();
        let rendered = rendered_for(liquidations, now);
        assert!(answer(&rendered, &get("/api/liquidations?limit=5"), SLOW).is_some());
        assert!(answer(&rendered, &get("/api/positions/at-risk?limit=5"), SLOW).is_none());
        assert!(answer(&rendered, &get("/api/positions/unhealthy?limit=5"), SLOW).is_none());
        let at_risk = at_risk_answer(Query("below=1500000000000000000")).unwrap();
        let rendered = rendered_for(at_risk, now);
        assert!(
            answer(
                &rendered,
                &get("/api/positions/at-risk?below=1500000000000000000"),
                SLOW
            )
            .is_some()
        );
        assert!(answer(&rendered, &get("/api/positions/at-risk"), SLOW).is_none());
    }
}
