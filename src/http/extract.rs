//! Small extractors shared by the handlers.

use actix_web::{FromRequest, HttpRequest, dev::Payload, web};
use futures_util::future::{Ready, ready};

use crate::domain::pubkey::{Pubkey, is_pubkey, parse_pubkey};
use crate::error::{ApiError, ApiResult};
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
            None => Err(ApiError::Internal),
        };
        ready(result)
    }
}

/// Query-string parameters. A malformed query string is `400 invalid`. Kept as
/// a short list (queries carry a handful of keys; no hashing per request).
pub struct Params(Vec<(String, String)>);

impl FromRequest for Params {
    type Error = ApiError;
    type Future = Ready<Result<Params, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        // A NUL anywhere is `invalid`: PostgreSQL text cannot hold it.
        let parsed = web::Query::<Vec<(String, String)>>::from_query(req.query_string())
            .ok()
            .map(|q| q.into_inner())
            .filter(|pairs| {
                !pairs
                    .iter()
                    .any(|(k, v)| k.contains('\0') || v.contains('\0'))
            })
            .map(Params)
            .ok_or(ApiError::Invalid);
        ready(parsed)
    }
}

impl Params {
    /// A parameter (the last one when repeated); an empty value counts as absent.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }

    /// A parameter that must be a base58 pubkey when present, parsed (else `400 invalid`).
    pub fn key(&self, key: &str) -> ApiResult<Option<Pubkey>> {
        self.get(key)
            .map(|v| parse_pubkey(v).map_err(|_| ApiError::Invalid))
            .transpose()
    }

    /// A parameter that must be a base58 pubkey when present (else `400 invalid`).
    pub fn pubkey(&self, key: &str) -> ApiResult<Option<&str>> {
        match self.get(key) {
            Some(v) if !is_pubkey(v) => Err(ApiError::Invalid),
            other => Ok(other),
        }
    }
}
