//! Conditional GET and long polls (docs/design.md §11) on the six routes served
//! from rendered bodies: each answer carries its strong ETag and
//! `Cache-Control: no-cache`; an `If-None-Match` that lists the tag gets 304
//! with no body; with `wait_ms` as well, the request is held until the answer
//! changes (200) or the wait ends (304). A held request holds no worker: it
//! awaits the rendered answers' change signal, re-checking at least every
//! second (oracle staleness moves with the clock), and at most
//! `server.max_held_polls` are held (past that they are answered at once).

use std::time::Duration;

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::http::header::{
    CACHE_CONTROL, CONTENT_TYPE, ETAG, HeaderMap, HeaderValue, IF_NONE_MATCH,
};

use utoipa::openapi::Required;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, SchemaType, Type};

use super::query::Query;
use super::state::AppState;
use crate::error::{ApiError, ApiResult};
use crate::serve::poll_answers::{Body, Changes, SharedRendered};

/// The longest a poll may ask to be held.
pub const MAX_WAIT_MS: u64 = 30_000;
/// A held poll re-checks its answer at least this often.
const RECHECK: Duration = Duration::from_secs(1);

/// The OpenAPI parameters of a conditional GET and long poll, shared by the six
/// routes of docs/design.md §11 (`params(..., LongPoll)` in their `utoipa::path`).
pub struct LongPoll;

impl utoipa::IntoParams for LongPoll {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let wait_ms = ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int32)))
            .minimum(Some(0))
            .maximum(Some(MAX_WAIT_MS));
        let tags =
            ObjectBuilder::new().schema_type(SchemaType::from_iter([Type::String, Type::Null]));
        vec![
            ParameterBuilder::new()
                .name("wait_ms")
                .parameter_in(ParameterIn::Query)
                .required(Required::False)
                .description(Some(format!(
                    "long poll (docs/design.md §11): with an If-None-Match that matches the current answer, hold the request up to this many milliseconds until the answer changes (200) or the wait ends (304); 0 to {MAX_WAIT_MS}"
                )))
                .schema(Some(wait_ms))
                .build(),
            ParameterBuilder::new()
                .name("If-None-Match")
                .parameter_in(ParameterIn::Header)
                .required(Required::False)
                .description(Some("ETags held (or *): a match is answered 304 with no body"))
                .schema(Some(tags))
                .build(),
        ]
    }
}

/// What a GET asks beyond the answer: the tags it holds, how long it may wait.
pub struct Conditional<'a> {
    if_none_match: Option<&'a [u8]>,
    wait: Duration,
}

impl<'a> Conditional<'a> {
    /// `wait_ms` (0 to 30000, else 400 `invalid`) and `If-None-Match`.
    pub fn of(headers: &'a HeaderMap, query: Query<'_>) -> ApiResult<Conditional<'a>> {
        let wait_ms = match query.get("wait_ms") {
            None => 0,
            Some(v) => {
                if v.is_empty() || v.len() > 5 || !v.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(ApiError::Invalid);
                }
                v.parse::<u64>()
                    .ok()
                    .filter(|ms| *ms <= MAX_WAIT_MS)
                    .ok_or(ApiError::Invalid)?
            }
        };
        Ok(Conditional {
            if_none_match: headers.get(IF_NONE_MATCH).map(HeaderValue::as_bytes),
            wait: Duration::from_millis(wait_ms),
        })
    }

    /// The client holds this body already.
    pub fn holds(&self, body: &Body) -> bool {
        self.if_none_match.is_some_and(|tags| body.matches(tags))
    }

    /// It asks to be held if it holds the answer (a tag and a wait).
    pub fn may_wait(&self) -> bool {
        !self.wait.is_zero() && self.if_none_match.is_some()
    }

    /// It would be held: it holds the body and may wait.
    pub fn would_wait(&self, body: &Body) -> bool {
        self.may_wait() && self.holds(body)
    }

    /// 200 with the body, or 304 when the client holds it.
    pub fn respond(&self, body: &Body) -> HttpResponse {
        if self.holds(body) {
            not_modified(body)
        } else {
            ok(body)
        }
    }
}

/// A conditional GET that is never held (history): 200 with the body and its
/// tag, or 304 when `If-None-Match` lists the tag.
pub fn respond_once(headers: &HeaderMap, body: &Body) -> HttpResponse {
    let holds = headers
        .get(IF_NONE_MATCH)
        .is_some_and(|tags| body.matches(tags.as_bytes()));
    if holds { not_modified(body) } else { ok(body) }
}

/// A 200 with a rendered body, its tag, and `no-cache` (revalidate each time).
pub fn ok(body: &Body) -> HttpResponse {
    // Static and shared header values: nothing parsed or copied per answer.
    let mut response = HttpResponse::Ok();
    response
        .insert_header((CONTENT_TYPE, HeaderValue::from_static("application/json")))
        .insert_header((CACHE_CONTROL, HeaderValue::from_static("no-cache")));
    if let Ok(tag) = HeaderValue::from_maybe_shared(body.etag.clone()) {
        response.insert_header((ETAG, tag));
    }
    response.body(body.bytes.clone())
}

/// A 304: the tag, `no-cache`, and no body.
pub fn not_modified(body: &Body) -> HttpResponse {
    let mut response = HttpResponse::build(StatusCode::NOT_MODIFIED);
    response.insert_header((CACHE_CONTROL, HeaderValue::from_static("no-cache")));
    if let Ok(tag) = HeaderValue::from_maybe_shared(body.etag.clone()) {
        response.insert_header((ETAG, tag));
    }
    response.finish()
}

/// Answers with the current body (from `current`), holding a request that
/// already has it for up to its wait, until the body changes.
pub async fn answer<F, Fut>(
    state: &AppState,
    (rendered, of): (&SharedRendered, Changes),
    cond: Conditional<'_>,
    current: F,
) -> ApiResult<HttpResponse>
where
    F: Fn() -> Fut,
    Fut: Future<Output = ApiResult<Body>>,
{
    if !cond.may_wait() {
        return Ok(cond.respond(&current().await?));
    }
    // Subscribed before the first read: a change in between is not missed.
    let mut changes = rendered.changes(of);
    let body = current().await?;
    if !cond.would_wait(&body) {
        return Ok(cond.respond(&body));
    }
    let Some(_held) = state.held_polls.hold() else {
        crate::metrics::long_poll_refused();
        return Ok(not_modified(&body));
    };
    let deadline = tokio::time::Instant::now() + cond.wait;
    // A replica closing for a stop answers what it holds: the client's next
    // poll goes to another replica.
    let closing = state.drain.closing();
    tokio::pin!(closing);
    loop {
        let recheck = (tokio::time::Instant::now() + RECHECK).min(deadline);
        tokio::select! {
            () = &mut closing => return Ok(not_modified(&body)),
            changed = changes.changed() => {
                if changed.is_err() {
                    // No more change signals (the service is stopping): wait out.
                    tokio::time::sleep_until(deadline).await;
                }
            }
            () = tokio::time::sleep_until(recheck) => {}
        }
        let body = current().await?;
        if !cond.holds(&body) {
            return Ok(ok(&body));
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(not_modified(&body));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn cond<'a>(headers: &'a HeaderMap, query: &str) -> ApiResult<Conditional<'a>> {
        Conditional::of(headers, Query(query))
    }

    #[test]
    fn wait_ms_is_0_to_30000_or_invalid() {
        let headers = HeaderMap::new();
        for ok in ["", "wait_ms=0", "wait_ms=30000", "wait_ms=250"] {
            assert!(cond(&headers, ok).is_ok(), "{ok}");
        }
        for bad in [
            "wait_ms=30001",
            "wait_ms=-1",
            "wait_ms=1.5",
            "wait_ms=x",
            "wait_ms=+5",
            "wait_ms=99999999999",
        ] {
            assert_eq!(cond(&headers, bad).err(), Some(ApiError::Invalid), "{bad}");
        }
    }

    #[test]
    fn a_held_tag_is_304_and_another_200() {
        let body = Body::new(Bytes::from_static(b"{}"));
        let mut headers = HeaderMap::new();
        assert_eq!(cond(&headers, "").unwrap().respond(&body).status(), 200);
        headers.insert(
            IF_NONE_MATCH,
            HeaderValue::from_maybe_shared(body.etag.clone()).unwrap(),
        );
        let held = cond(&headers, "wait_ms=10").unwrap();
        let response = held.respond(&body);
        assert_eq!(response.status(), 304);
        assert_eq!(
            response.headers().get(ETAG).unwrap().as_bytes(),
            &body.etag[..]
        );
        assert!(held.would_wait(&body));
        let other = Body::new(Bytes::from_static(b"[]"));
        assert_eq!(held.respond(&other).status(), 200);
        assert!(!held.would_wait(&other));
        headers.insert(IF_NONE_MATCH, HeaderValue::from_static("garbage"));
        assert_eq!(
            cond(&headers, "").unwrap().respond(&body).status(),
            200,
            "garbage does not match"
        );
    }
}
