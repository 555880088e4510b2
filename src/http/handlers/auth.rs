//! POST /api/auth/nonce: step 1 of the handshake (spec 4.1, 5.2).

use crate::http::openapi::schemas::{ActionText, PubkeyText};
use actix_web::{HttpResponse, web};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::actors::nonce_registry::IssueNonce;
use crate::domain::auth_message::{canonical_message, is_valid_action};
use crate::domain::pubkey::is_pubkey;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::http::body::JsonBody;
use crate::http::extract::PublicWrite;
use crate::http::state::AppState;

#[derive(Deserialize, ToSchema)]
pub struct NonceRequest {
    /// Base58 wallet the nonce is issued to.
    #[schema(value_type = PubkeyText)]
    pub pubkey: String,
    /// The operation it is for, e.g. `add_admin:<pubkey>:<role>` (1-256 printable ASCII).
    #[schema(value_type = ActionText)]
    pub action: String,
}

#[derive(Serialize, ToSchema)]
pub struct NonceResponse {
    /// 32 hexadecimal characters.
    pub nonce: String,
    /// The canonical text to sign: `Service admin auth\nAction: <action>\nNonce: <nonce>`.
    pub message: String,
    #[serde(rename = "expiresAt")]
    pub expires_at: String,
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
    let pubkey = body.str("pubkey").map_err(|_| ApiError::InvalidPubkey)?;
    let action = body.str("action")?;
    let (Some(pubkey), Some(action)) = (pubkey, action) else {
        return Err(ApiError::Required("pubkey and action required"));
    };
    if !is_pubkey(pubkey) {
        return Err(ApiError::InvalidPubkey);
    }
    if !is_valid_action(action) {
        return Err(ApiError::Invalid);
    }
    let issued = state
        .nonces
        .send(IssueNonce {
            pubkey: pubkey.to_string(),
            action: action.to_string(),
        })
        .await
        .map_err(|_| ApiError::Internal)??;
    Ok(HttpResponse::Ok().json(NonceResponse {
        message: canonical_message(action, &issued.nonce),
        nonce: issued.nonce,
        expires_at: iso(issued.expires_at),
    }))
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}
