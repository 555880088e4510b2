//! The view a read asks for (docs/design.md §15, §17): `commitment` and
//! `oracle` on the six polled reads and the unhealthy stream, and the
//! `Lendex-Commitment` and `Lendex-Oracle` headers on every 200 and 304 they
//! answer.
//!
//! `confirmed` (durable; the default) is served everywhere; `processed` on a
//! cluster reading the chain at processed. `pool` (the pools' own prices;
//! the default) everywhere; `feed` where feeds are read. A view not served
//! here, or any other word (`finalized` included), is `400 invalid`.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::http::header::{HeaderName, HeaderValue};
use utoipa::openapi::Required;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, Type};

use super::query::Query;
use crate::domain::forks::Commitment;
use crate::domain::view_key::{Oracle, ViewKey};
use crate::error::{ApiError, ApiResult};
use crate::serve::poll_answers::SharedRendered;

/// Names the commitment of every 200 and 304 of these routes.
pub const COMMITMENT_HEADER: HeaderName = HeaderName::from_static("lendex-commitment");
/// Names the oracle of every 200 and 304 of these routes.
pub const ORACLE_HEADER: HeaderName = HeaderName::from_static("lendex-oracle");

/// The rendered answers of each view served here, read by HTTP workers
/// without a round trip to the cache.
#[derive(Clone, Default)]
pub struct RenderedViews {
    pub confirmed: SharedRendered,
    /// Where the chain is read at processed.
    pub processed: Option<SharedRendered>,
    /// Where feeds are read.
    pub feed: Option<SharedRendered>,
    /// Where both are.
    pub processed_feed: Option<SharedRendered>,
}

impl RenderedViews {
    /// The view's answers, when it is served here.
    pub fn get(&self, key: ViewKey) -> Option<&SharedRendered> {
        match (key.commitment, key.oracle) {
            (Commitment::Confirmed, Oracle::Pool) => Some(&self.confirmed),
            (Commitment::Processed, Oracle::Pool) => self.processed.as_ref(),
            (Commitment::Confirmed, Oracle::Feed) => self.feed.as_ref(),
            (Commitment::Processed, Oracle::Feed) => self.processed_feed.as_ref(),
        }
    }

    /// The view `query` asks for, with its answers: `confirmed` and `pool`
    /// when absent; a view not served here is `400 invalid`.
    pub fn requested(&self, query: Query<'_>) -> ApiResult<(ViewKey, &SharedRendered)> {
        let key = requested(query)?;
        Ok((key, self.get(key).ok_or(ApiError::Invalid)?))
    }
}

/// The view `query` names, served here or not.
fn requested(query: Query<'_>) -> ApiResult<ViewKey> {
    let commitment = match query.get("commitment").as_deref().map(Commitment::parse) {
        None => Commitment::Confirmed,
        Some(named) => named.ok_or(ApiError::Invalid)?,
    };
    let oracle = match query.get("oracle").as_deref().map(Oracle::parse) {
        None => Oracle::Pool,
        Some(named) => named.ok_or(ApiError::Invalid)?,
    };
    Ok(ViewKey::new(commitment, oracle))
}

/// The headers' values for `view` (static: nothing built per answer).
pub fn values(view: ViewKey) -> [(HeaderName, HeaderValue); 2] {
    [
        (
            COMMITMENT_HEADER,
            HeaderValue::from_static(view.commitment.name()),
        ),
        (ORACLE_HEADER, HeaderValue::from_static(view.oracle.name())),
    ]
}

/// Names the view on a 200 or 304; other answers are left as they are.
pub fn stamp(mut response: HttpResponse, view: ViewKey) -> HttpResponse {
    if matches!(response.status(), StatusCode::OK | StatusCode::NOT_MODIFIED) {
        for (name, value) in values(view) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

/// The OpenAPI parameters (`params(..., ViewParams)`).
pub struct ViewParams;

impl utoipa::IntoParams for ViewParams {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let enumerated = |values: [&str; 2]| {
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(values))
                .default(Some(values[0].into()))
        };
        vec![
            ParameterBuilder::new()
                .name("commitment")
                .parameter_in(ParameterIn::Query)
                .required(Required::False)
                .description(Some(
                    "the view (docs/design.md §15): `confirmed` (default, durable) or `processed` \
                     (the best chain now, tentative; only on a server reading at processed, else \
                     400 invalid). The answer's `Lendex-Commitment` header names the view",
                ))
                .schema(Some(enumerated(["confirmed", "processed"])))
                .build(),
            ParameterBuilder::new()
                .name("oracle")
                .parameter_in(ParameterIn::Query)
                .required(Required::False)
                .description(Some(
                    "the price each pool is valued at (docs/design.md §17): `pool` (default, the \
                     pool's own copy, what the program uses now) or `feed` (the pool's Pyth feed \
                     where it is usable and differs: what the program will use once the pool is \
                     cranked; entries, quotes and events then list the pools to crank in \
                     `crank`; only on a server reading feeds, else 400 invalid). The answer's \
                     `Lendex-Oracle` header names it",
                ))
                .schema(Some(enumerated(["pool", "feed"])))
                .build(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn views(processed: bool, feed: bool) -> RenderedViews {
        RenderedViews {
            confirmed: SharedRendered::default(),
            processed: processed.then(SharedRendered::default),
            feed: feed.then(SharedRendered::default),
            processed_feed: (processed && feed).then(SharedRendered::default),
        }
    }

    fn asked(views: &RenderedViews, query: &str) -> Option<ViewKey> {
        views.requested(Query(query)).ok().map(|(key, _)| key)
    }

    #[test]
    fn confirmed_at_the_pools_price_is_the_default_and_others_only_where_served() {
        for (processed, feed) in [(false, false), (true, false), (false, true), (true, true)] {
            let v = views(processed, feed);
            let ask = |q: &str| asked(&v, q);
            assert_eq!(ask(""), Some(ViewKey::CONFIRMED));
            assert_eq!(ask("commitment=&oracle="), Some(ViewKey::CONFIRMED));
            assert_eq!(
                ask("limit=3&commitment=confirmed&oracle=pool"),
                Some(ViewKey::CONFIRMED)
            );
            for bad in ["finalized", "CONFIRMED", "confirmed%00", "1"] {
                assert_eq!(ask(&format!("commitment={bad}")), None, "{bad}");
            }
            for bad in ["POOL", "copy", "pyth", "feed%00"] {
                assert_eq!(ask(&format!("oracle={bad}")), None, "{bad}");
            }
            let processed_pool = ViewKey::new(Commitment::Processed, Oracle::Pool);
            let confirmed_feed = ViewKey::new(Commitment::Confirmed, Oracle::Feed);
            assert_eq!(
                ask("commitment=processed"),
                processed.then_some(processed_pool)
            );
            assert_eq!(ask("oracle=feed"), feed.then_some(confirmed_feed));
            assert_eq!(
                ask("oracle=feed&commitment=processed"),
                (processed && feed).then_some(ViewKey::new(Commitment::Processed, Oracle::Feed))
            );
        }
    }

    #[test]
    fn only_answers_with_a_view_are_stamped() {
        let feed = ViewKey::new(Commitment::Confirmed, Oracle::Feed);
        let ok = stamp(HttpResponse::Ok().finish(), feed);
        assert_eq!(ok.headers().get(COMMITMENT_HEADER).unwrap(), "confirmed");
        assert_eq!(ok.headers().get(ORACLE_HEADER).unwrap(), "feed");
        let not_modified = stamp(HttpResponse::NotModified().finish(), ViewKey::CONFIRMED);
        assert_eq!(not_modified.headers().get(ORACLE_HEADER).unwrap(), "pool");
        let bad = stamp(HttpResponse::BadRequest().finish(), feed);
        assert!(bad.headers().get(COMMITMENT_HEADER).is_none());
        assert!(bad.headers().get(ORACLE_HEADER).is_none());
    }
}
