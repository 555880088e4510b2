//! POST /api/auth/nonce: step 1 of the handshake (docs/design.md §4.1, 5.2).

use actix_web::{HttpResponse, web};
use chrono::{DateTime, SecondsFormat, Utc};

use crate::actors::nonce_registry::IssueNonce;
use crate::domain::auth_message::{canonical_message, is_valid_action};
use crate::domain::pubkey::{Pubkey, parse_pubkey};
use crate::error::{ApiError, ApiResult};
use crate::http::body::{JsonBody, ParseBody};
use crate::http::extract::PublicWrite;
use crate::http::state::AppState;
use crate::wire::auth::{NonceRequest, NonceResponse};
use crate::wire::error::ErrorBody;

/// A nonce request as the handler needs it.
pub struct NonceCall<'a> {
    pub pubkey: Pubkey,
    pub action: &'a str,
}

impl ParseBody for NonceRequest {
    type Call<'a> = NonceCall<'a>;

    /// docs/design.md §4.1's errors, in its order: a non-string pubkey counts as an invalid
    /// one, then `pubkey and action required`, `invalid pubkey`, and an action
    /// outside 1-256 printable ASCII is `invalid`.
    fn parse(body: &JsonBody) -> ApiResult<Self::Call<'_>> {
        let pubkey = body.str("pubkey").map_err(|_| ApiError::InvalidPubkey)?;
        let action = body.str("action")?;
        let (Some(pubkey), Some(action)) = (pubkey, action) else {
            return Err(ApiError::Required("pubkey and action required"));
        };
        let pubkey = parse_pubkey(pubkey).map_err(|_| ApiError::InvalidPubkey)?;
        if !is_valid_action(action) {
            return Err(ApiError::Invalid);
        }
        Ok(NonceCall { pubkey, action })
    }
}

#[utoipa::path(post, path = "/api/auth/nonce", tag = "auth", request_body = NonceRequest,
    responses(
        (status = 200, body = NonceResponse, description = "a fresh nonce and the exact message to sign"),
        (status = 400, body = ErrorBody, description = "bad json | pubkey and action required | invalid pubkey | invalid"),
        (status = 413, body = ErrorBody, description = "payload too large"),
        (status = 429, body = ErrorBody, description = "rate limited"),
        (status = 503, body = ErrorBody, description = "database unavailable")))]
pub async fn issue_nonce(
    _: PublicWrite,
    state: web::Data<AppState>,
    body: JsonBody,
) -> ApiResult<HttpResponse> {
    let NonceCall { pubkey, action } = NonceRequest::parse(&body)?;
    let issued = state
        .nonces
        .send(IssueNonce {
            pubkey: pubkey.to_string(),
            action: action.to_string(),
        })
        .await??;
    Ok(HttpResponse::Ok().json(NonceResponse {
        message: canonical_message(action, &issued.nonce),
        nonce: issued.nonce,
        expires_at: iso(issued.expires_at),
    }))
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> ApiResult<String> {
        let body = JsonBody::parse(json.as_bytes()).unwrap();
        NonceRequest::parse(&body).map(|c| format!("{} {}", c.pubkey, c.action))
    }

    #[test]
    fn errors_in_the_spec_order() {
        let key = "11111111111111111111111111111111";
        assert_eq!(
            parse(&format!(r#"{{"pubkey":"{key}","action":"add_admin:x:y"}}"#)).unwrap(),
            format!("{key} add_admin:x:y")
        );
        // A pubkey of the wrong type is an invalid pubkey, even with no action.
        assert!(matches!(
            parse(r#"{"pubkey":5}"#),
            Err(ApiError::InvalidPubkey)
        ));
        assert!(matches!(
            parse(r#"{"pubkey":""}"#),
            Err(ApiError::Required(_))
        ));
        assert!(matches!(
            parse(r#"{"action":"a"}"#),
            Err(ApiError::Required(_))
        ));
        assert!(matches!(
            parse(r#"{"pubkey":"0OIl","action":"a"}"#),
            Err(ApiError::InvalidPubkey)
        ));
        let long = "a".repeat(257);
        assert!(matches!(
            parse(&format!(r#"{{"pubkey":"{key}","action":"{long}"}}"#)),
            Err(ApiError::Invalid)
        ));
    }
}
