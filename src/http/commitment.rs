//! The view a read asks for (docs/design.md §15): `commitment` on the five
//! polled reads and the unhealthy stream, and the `Lendex-Commitment` header
//! on every 200 and 304 they answer.
//!
//! `confirmed` (durable; the default) is served everywhere; `processed` on a
//! cluster reading the chain at processed, else it is `400 invalid`, as is
//! any other word (`finalized` included).

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::http::header::{HeaderName, HeaderValue};
use utoipa::openapi::Required;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, Type};

use super::query::Query;
use crate::domain::forks::Commitment;
use crate::error::{ApiError, ApiResult};

/// Names the view of every 200 and 304 of these routes.
pub const HEADER: HeaderName = HeaderName::from_static("lendex-commitment");

/// The view `query` asks for: `confirmed` when absent; `processed` only
/// where it is served.
pub fn requested(query: Query<'_>, serves_processed: bool) -> ApiResult<Commitment> {
    match query.get("commitment").as_deref().map(Commitment::parse) {
        None | Some(Some(Commitment::Confirmed)) => Ok(Commitment::Confirmed),
        Some(Some(Commitment::Processed)) if serves_processed => Ok(Commitment::Processed),
        Some(_) => Err(ApiError::Invalid),
    }
}

/// The header's value for `view` (static: nothing built per answer).
pub fn value(view: Commitment) -> HeaderValue {
    HeaderValue::from_static(view.name())
}

/// Names the view on a 200 or 304; other answers are left as they are.
pub fn stamp(mut response: HttpResponse, view: Commitment) -> HttpResponse {
    if matches!(response.status(), StatusCode::OK | StatusCode::NOT_MODIFIED) {
        response.headers_mut().insert(HEADER, value(view));
    }
    response
}

/// The OpenAPI parameter (`params(..., CommitmentParam)`).
pub struct CommitmentParam;

impl utoipa::IntoParams for CommitmentParam {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let values = ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(["confirmed", "processed"]))
            .default(Some("confirmed".into()));
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
                .schema(Some(values))
                .build(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confirmed_is_the_default_and_processed_only_where_served() {
        for served in [false, true] {
            let ask = |q: &str| requested(Query(q), served);
            assert_eq!(ask("").ok(), Some(Commitment::Confirmed));
            assert_eq!(ask("commitment=").ok(), Some(Commitment::Confirmed));
            assert_eq!(
                ask("limit=3&commitment=confirmed").ok(),
                Some(Commitment::Confirmed)
            );
            for bad in ["finalized", "CONFIRMED", "confirmed%00", "1"] {
                let query = format!("commitment={bad}");
                assert!(matches!(ask(&query), Err(ApiError::Invalid)), "{bad}");
            }
        }
        assert!(matches!(
            requested(Query("commitment=processed"), false),
            Err(ApiError::Invalid)
        ));
        assert_eq!(
            requested(Query("commitment=processed"), true).ok(),
            Some(Commitment::Processed)
        );
    }

    #[test]
    fn only_answers_with_a_view_are_stamped() {
        let ok = stamp(HttpResponse::Ok().finish(), Commitment::Confirmed);
        assert_eq!(ok.headers().get(HEADER).unwrap(), "confirmed");
        let not_modified = stamp(HttpResponse::NotModified().finish(), Commitment::Confirmed);
        assert_eq!(not_modified.headers().get(HEADER).unwrap(), "confirmed");
        let bad = stamp(HttpResponse::BadRequest().finish(), Commitment::Confirmed);
        assert!(bad.headers().get(HEADER).is_none());
    }
}
