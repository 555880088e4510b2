//! Small extractors shared by the handlers.

use std::borrow::Cow;

use actix_web::{FromRequest, HttpRequest, dev::Payload, web};
use futures_util::future::{Ready, ready};

use crate::domain::pubkey::Pubkey;
use crate::error::{ApiError, ApiResult};
use crate::http::query::Query;
use crate::http::state::AppState;

/// Put first in a public write handler's arguments: takes a rate-limit token for
/// the client's IP before anything else is read, or answers 429.
pub struct PublicWrite;

impl FromRequest for PublicWrite {
    type Error = ApiError;
    type Future = Ready<Result<PublicWrite, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let result = match req.app_data::<web::Data<AppState>>() {
            Some(state) => state.limiter.check(req).map(|_| PublicWrite),
            None => Err(ApiError::internal("AppState is not registered on the App")),
        };
        ready(result)
    }
}

/// Query-string parameters, decoded when asked for (`query::Query`): the
/// request is shared, not copied, and a value without escapes is borrowed
/// from it. A NUL anywhere is `400 invalid`.
pub struct Params(HttpRequest);

impl FromRequest for Params {
    type Error = ApiError;
    type Future = Ready<Result<Params, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(
            Query(req.query_string())
                .check()
                .map(|_| Params(req.clone())),
        )
    }
}

impl Params {
    /// The request the parameters are of.
    pub fn request(&self) -> &HttpRequest {
        &self.0
    }

    pub fn query(&self) -> Query<'_> {
        Query(self.0.query_string())
    }

    /// `Query::get`.
    pub fn get(&self, key: &str) -> Option<Cow<'_, str>> {
        self.query().get(key)
    }

    /// `Query::key`.
    pub fn key(&self, key: &str) -> ApiResult<Option<Pubkey>> {
        self.query().key(key)
    }

    /// `Query::pubkey`.
    pub fn pubkey(&self, key: &str) -> ApiResult<Option<Cow<'_, str>>> {
        self.query().pubkey(key)
    }
}
