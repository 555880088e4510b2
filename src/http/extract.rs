//! Small extractors shared by the handlers.

use std::borrow::Cow;

use actix_web::{FromRequest, HttpRequest, dev::Payload, web};
use futures_util::future::{Ready, ready};

use crate::domain::pubkey::{Pubkey, is_pubkey, parse_pubkey};
use crate::error::{ApiError, ApiResult};
use crate::http::query;
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

/// Query-string parameters, decoded when asked for (`query`): the request is
/// shared, not copied, and a value without escapes is borrowed from it. A NUL
/// anywhere, escaped, is `400 invalid`: PostgreSQL text cannot hold it.
pub struct Params(HttpRequest);

impl FromRequest for Params {
    type Error = ApiError;
    type Future = Ready<Result<Params, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let query = req.query_string();
        // The request line holds no raw NUL (the parser refuses it), so only
        // an escape can make one.
        let has_nul = query.contains('%')
            && query::pairs(query).any(|(k, v)| k.contains('\0') || v.contains('\0'));
        ready(if has_nul {
            Err(ApiError::Invalid)
        } else {
            Ok(Params(req.clone()))
        })
    }
}

impl Params {
    /// A parameter (the last one when repeated); an empty value counts as absent.
    pub fn get(&self, key: &str) -> Option<Cow<'_, str>> {
        query::last(self.0.query_string(), key).filter(|v| !v.is_empty())
    }

    /// A parameter that must be a base58 pubkey when present, parsed (else `400 invalid`).
    pub fn key(&self, key: &str) -> ApiResult<Option<Pubkey>> {
        self.get(key)
            .map(|v| parse_pubkey(&v).map_err(|_| ApiError::Invalid))
            .transpose()
    }

    /// A parameter that must be a base58 pubkey when present (else `400 invalid`).
    pub fn pubkey(&self, key: &str) -> ApiResult<Option<Cow<'_, str>>> {
        match self.get(key) {
            Some(v) if !is_pubkey(&v) => Err(ApiError::Invalid),
            other => Ok(other),
        }
    }
}
