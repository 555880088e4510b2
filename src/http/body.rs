//! Request bodies. The body is read with a 64 KiB cap and parsed as JSON whatever
//! the Content-Type says; anything but a JSON object is `bad json`. Fields are then
//! read one by one, so each endpoint can give its contract's own error for a missing
//! field (its "required" message) and `invalid` for a field of the wrong type.

use std::time::Duration;

use actix_web::{FromRequest, HttpRequest, dev::Payload, web::BytesMut};
use futures_util::{StreamExt, future::LocalBoxFuture};
use serde_json::{Map, Value};

use crate::domain::pubkey::is_pubkey;
use crate::error::{ApiError, ApiResult};
use crate::http::state::AppState;

/// Largest accepted body (docs/design.md §4: 413 beyond 64 KiB).
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// A route's own cap, set as its resource's data, for a body that must hold
/// more than `MAX_BODY_BYTES` (a webhook's 10,000 owners: docs/design.md §18).
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit(pub usize);

/// Time to receive a body when no settings are reachable (`server.request_timeout_ms`).
const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(10);

pub struct JsonBody(Map<String, Value>);

/// How a request body (a type of `wire`) is read into the typed call its
/// handler takes, each route's errors in the order its contract gives them.
/// Implemented beside each handler.
pub trait ParseBody {
    type Call<'a>;
    fn parse(body: &JsonBody) -> ApiResult<Self::Call<'_>>;
}

impl JsonBody {
    pub fn parse(bytes: &[u8]) -> ApiResult<JsonBody> {
        match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(map)) => Ok(JsonBody(map)),
            _ => Err(ApiError::BadJson),
        }
    }

    /// A string field; absent, null and "" all count as missing (`None`). A NUL
    /// character is `invalid` (PostgreSQL text cannot hold it), found here, before
    /// any nonce is spent.
    pub fn str(&self, key: &str) -> ApiResult<Option<&str>> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) if s.contains('\0') => Err(ApiError::Invalid),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(ApiError::Invalid),
        }
    }

    /// A string field that must be a base58 pubkey when present.
    pub fn pubkey(&self, key: &str) -> ApiResult<Option<&str>> {
        match self.str(key)? {
            Some(s) if !is_pubkey(s) => Err(ApiError::Invalid),
            other => Ok(other),
        }
    }

    /// An array of strings; absent and null are `None`. Anything else (a
    /// member that is not a non-empty string without NUL) is `invalid`.
    pub fn strings(&self, key: &str) -> ApiResult<Option<Vec<&str>>> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) if !s.is_empty() && !s.contains('\0') => Ok(s.as_str()),
                    _ => Err(ApiError::Invalid),
                })
                .collect::<ApiResult<Vec<_>>>()
                .map(Some),
            Some(_) => Err(ApiError::Invalid),
        }
    }

    /// An integer field within 0..=255.
    pub fn u8(&self, key: &str) -> ApiResult<Option<u8>> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => whole(n)
                .and_then(|v| u8::try_from(v).ok())
                .map(Some)
                .ok_or(ApiError::Invalid),
            Some(_) => Err(ApiError::Invalid),
        }
    }
}

/// A JSON number that is a whole, non-negative one: `22` or `22.0` (JSON has
/// one number type, and the document's "integer" admits both), never `22.5`.
fn whole(n: &serde_json::Number) -> Option<u64> {
    n.as_u64().or_else(|| {
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && (0.0..=u64::MAX as f64).contains(f))
            .map(|f| f as u64)
    })
}

impl FromRequest for JsonBody {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<JsonBody, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let declared = req
            .headers()
            .get(actix_web::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        let limit = req
            .app_data::<actix_web::web::Data<AppState>>()
            .map(|s| Duration::from_millis(s.config.server.request_timeout_ms))
            .unwrap_or(DEFAULT_BODY_TIMEOUT);
        let max = req.app_data::<BodyLimit>().map_or(MAX_BODY_BYTES, |l| l.0);
        let mut payload = payload.take();
        Box::pin(async move {
            if declared.is_some_and(|n| n > max) {
                return Err(ApiError::PayloadTooLarge);
            }
            let read = async {
                let mut buf = BytesMut::new();
                while let Some(chunk) = payload.next().await {
                    let chunk = chunk.map_err(|_| ApiError::BadJson)?;
                    if buf.len() + chunk.len() > max {
                        return Err(ApiError::PayloadTooLarge);
                    }
                    buf.extend_from_slice(&chunk);
                }
                Ok(buf)
            };
            // A body that never arrives must not hold the socket and the handler.
            let buf = tokio::time::timeout(limit, read)
                .await
                .map_err(|_| ApiError::RequestTimeout)??;
            JsonBody::parse(&buf)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_objects_are_json_bodies() {
        assert!(JsonBody::parse(b"{}").is_ok());
        for bad in [
            &b"[]"[..],
            b"1",
            b"\"x\"",
            b"null",
            b"{",
            b"",
            b"{\"a\":1}x",
        ] {
            assert_eq!(JsonBody::parse(bad).err(), Some(ApiError::BadJson));
        }
    }

    #[test]
    fn fields_missing_or_wrong_type() {
        let body = JsonBody::parse(br#"{"a":"x","e":"","n":null,"i":5,"big":300}"#).unwrap();
        assert_eq!(body.str("a"), Ok(Some("x")));
        assert_eq!(body.str("e"), Ok(None));
        assert_eq!(body.str("n"), Ok(None));
        assert_eq!(body.str("zz"), Ok(None));
        assert_eq!(body.str("i"), Err(ApiError::Invalid));
        assert_eq!(body.u8("i"), Ok(Some(5)));
        assert_eq!(body.u8("big"), Err(ApiError::Invalid));
        assert_eq!(body.u8("a"), Err(ApiError::Invalid));
        // One number type in JSON: a whole float is that integer.
        let floats =
            JsonBody::parse(br#"{"w":22.0,"f":22.5,"neg":-1.0,"big":256.0,"e":2e2}"#).unwrap();
        assert_eq!(floats.u8("w"), Ok(Some(22)));
        assert_eq!(floats.u8("e"), Ok(Some(200)));
        for bad in ["f", "neg", "big"] {
            assert_eq!(floats.u8(bad), Err(ApiError::Invalid), "{bad}");
        }
        assert_eq!(body.pubkey("a"), Err(ApiError::Invalid));
        let nul = JsonBody::parse(br#"{"s":"a\u0000b"}"#).unwrap();
        assert_eq!(nul.str("s"), Err(ApiError::Invalid));
    }
}
