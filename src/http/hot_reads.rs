//! The liquidators' polls, answered ahead of the App. A GET of
//! /api/positions/unhealthy, /api/liquidations or /api/positions/at-risk whose
//! answer the health cache has already rendered for this second is served from
//! those shared bytes, with no routing, extractors or handler futures: the
//! answer is ready, and what is left per request is the HTTP stack (what the
//! hello-world baseline measures). Everything else (a miss, HEAD, another
//! spelling of the path, a parameter the handler would refuse) goes on to the
//! App, whose handlers parse the query the same way (`*_answer`), give the
//! same bytes through the same `json_bytes`, and answer every error.

use actix_http::body::BoxBody;
use actix_http::{Method, Request, Response};

use super::handlers::liquidations::{at_risk_answer, liquidations_answer};
use super::handlers::positions::unhealthy_answer;
use super::observe::Observed;
use super::query::Query;
use super::rendered::json_bytes;
use crate::engine::answers::{Answer, SharedRendered, cached_answer, now_seconds};
use crate::error::ApiResult;

/// The cache-served routes: pattern (also the metrics label) and the parser.
type Parse = fn(Query) -> ApiResult<Answer>;
const ROUTES: [(&str, Parse); 3] = [
    ("/api/positions/unhealthy", unhealthy_answer),
    ("/api/liquidations", liquidations_answer),
    ("/api/positions/at-risk", at_risk_answer),
];

/// The answer to `req` when it is one of the routes above and already
/// rendered; None sends the request on to the App.
pub fn answer(rendered: &SharedRendered, req: &Request) -> Option<Response<BoxBody>> {
    if req.method() != Method::GET {
        return None;
    }
    let (route, parse) = ROUTES.iter().find(|(route, _)| *route == req.path())?;
    let observed = Observed::start(req.method(), req.path());
    let query = Query(req.uri().query().unwrap_or_default()).check().ok()?;
    let answer = parse(query).ok()?;
    let body = cached_answer(rendered, &answer, now_seconds())?;
    let response = json_bytes(body);
    observed.finish(route, req.method(), response.status().as_u16());
    Some(response.into())
}

#[cfg(test)]
mod tests {
    use actix_http::test::TestRequest;
    use actix_web::web::Bytes;

    use super::*;
    use crate::engine::answers::keep_answer;

    const BODY: &[u8] = br#"{"positions":[]}"#;

    fn rendered_for(answer: Answer, second: i64) -> SharedRendered {
        let rendered = SharedRendered::default();
        keep_answer(&rendered, answer, second, Bytes::from_static(BODY));
        rendered
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
            let response = answer(&rendered, &get("/api/positions/unhealthy?limit=7"));
            let again = answer(&rendered, &get("/api/positions/unhealthy?limit=1&limit=7"));
            (again.is_some(), response)
        });
        // A repeated parameter: the last one counts, as in the handler.
        assert!(rendered, "the last `limit` is the one read");
        let response = response.expect("rendered for this second");
        // The same response the handler builds.
        let expected: Response<BoxBody> = json_bytes(Bytes::from_static(BODY)).into();
        assert_eq!(response.status(), expected.status());
        assert_eq!(
            format!("{:?}", response.headers()),
            format!("{:?}", expected.headers())
        );
        let body = actix_http::body::to_bytes(response.into_body())
            .await
            .unwrap();
        assert_eq!(&body[..], BODY);
    }

    #[test]
    fn anything_else_goes_on_to_the_app() {
        let now = now_seconds();
        let rendered = rendered_for(unhealthy_answer(Query("")).unwrap(), now);
        let served = within_one_second(|now| {
            let rendered = rendered_for(unhealthy_answer(Query("")).unwrap(), now);
            answer(&rendered, &get("/api/positions/unhealthy")).is_some()
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
            assert!(answer(&rendered, &req).is_none(), "{:?}", req.uri());
        }
        // Rendered in an earlier second: stale for oracle ages, so not served.
        let old = rendered_for(unhealthy_answer(Query("")).unwrap(), now - 1);
        assert!(answer(&old, &get("/api/positions/unhealthy")).is_none());
    }

    #[test]
    fn each_route_reads_its_own_answer() {
        let now = now_seconds();
        let liquidations = liquidations_answer(Query("limit=5")).unwrap();
        let rendered = rendered_for(liquidations, now);
        assert!(answer(&rendered, &get("/api/liquidations?limit=5")).is_some());
        assert!(answer(&rendered, &get("/api/positions/at-risk?limit=5")).is_none());
        assert!(answer(&rendered, &get("/api/positions/unhealthy?limit=5")).is_none());
        let at_risk = at_risk_answer(Query("below=1500000000000000000")).unwrap();
        let rendered = rendered_for(at_risk, now);
        assert!(
            answer(
                &rendered,
                &get("/api/positions/at-risk?below=1500000000000000000")
            )
            .is_some()
        );
        assert!(answer(&rendered, &get("/api/positions/at-risk")).is_none());
    }
}
