//! The one error type of the API. Every failure a handler can meet becomes one of
//! these, and `error_response` below is the only place that turns it into the
//! spec's `{"error": "<short reason>"}` body and HTTP status (spec §7, decisions §4).

use crate::wire::error::ErrorBody;
use actix_web::{HttpResponse, ResponseError, http::StatusCode};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    // 400
    BadJson,
    MissingFields,
    /// An endpoint's own "required" message, e.g. `pool_address required`.
    Required(&'static str),
    InvalidPubkey,
    InvalidRole,
    BadPubkey(String),
    CannotRevokeYourself,
    Invalid,
    // 401
    BadSignature,
    NonceInvalidOrExpired,
    NotAuthorized,
    SuperAdminRequired,
    // 403
    Forbidden,
    // 404
    PoolAccountNotFound,
    NotFound,
    // 405, 408, 413, 429, 431
    MethodNotAllowed,
    RequestTimeout,
    PayloadTooLarge,
    RateLimited {
        retry_after_secs: u64,
    },
    /// The request line and headers are over the server's buffer (answered by
    /// the HTTP layer; see http::json_errors).
    HeadersTooLarge,
    // 5xx
    Internal,
    RpcUnavailable,
    DatabaseUnavailable,
}

impl ApiError {
    /// The exact `error` string of the body.
    pub fn message(&self) -> String {
        match self {
            ApiError::BadJson => "bad json".into(),
            ApiError::MissingFields => "missing fields".into(),
            ApiError::Required(text) => (*text).into(),
            ApiError::InvalidPubkey => "invalid pubkey".into(),
            ApiError::InvalidRole => "invalid role".into(),
            ApiError::BadPubkey(reason) => format!("bad pubkey: {reason}"),
            ApiError::CannotRevokeYourself => "cannot revoke yourself".into(),
            ApiError::Invalid => "invalid".into(),
            ApiError::BadSignature => "bad signature".into(),
            ApiError::NonceInvalidOrExpired => "nonce invalid or expired".into(),
            ApiError::NotAuthorized => "not authorized".into(),
            ApiError::SuperAdminRequired => "super_admin required".into(),
            ApiError::Forbidden => "forbidden".into(),
            ApiError::PoolAccountNotFound => "pool account not found".into(),
            ApiError::NotFound => "not found".into(),
            ApiError::MethodNotAllowed => "method not allowed".into(),
            ApiError::RequestTimeout => "request timeout".into(),
            ApiError::PayloadTooLarge => "payload too large".into(),
            ApiError::RateLimited { .. } => "rate limited".into(),
            ApiError::HeadersTooLarge => "headers too large".into(),
            ApiError::Internal => "internal error".into(),
            ApiError::RpcUnavailable => "rpc unavailable".into(),
            ApiError::DatabaseUnavailable => "database unavailable".into(),
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadJson
            | ApiError::MissingFields
            | ApiError::Required(_)
            | ApiError::InvalidPubkey
            | ApiError::InvalidRole
            | ApiError::BadPubkey(_)
            | ApiError::CannotRevokeYourself
            | ApiError::Invalid => StatusCode::BAD_REQUEST,
            ApiError::BadSignature
            | ApiError::NonceInvalidOrExpired
            | ApiError::NotAuthorized
            | ApiError::SuperAdminRequired => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden => StatusCode::FORBIDDEN,
            ApiError::PoolAccountNotFound | ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ApiError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::HeadersTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::RpcUnavailable => StatusCode::BAD_GATEWAY,
            ApiError::DatabaseUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

impl ApiError {
    /// The JSON body `{"error": "<message>"}`.
    pub fn body(&self) -> Vec<u8> {
        serde_json::to_vec(&ErrorBody {
            error: self.message(),
        })
        .expect("a string field serializes")
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status()
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status());
        match self {
            ApiError::RateLimited { retry_after_secs } => {
                response.insert_header(("Retry-After", retry_after_secs.to_string()));
            }
            // The rest of a late body may never come: do not keep the socket.
            ApiError::RequestTimeout => {
                response.force_close();
            }
            _ => {}
        }
        response.content_type("application/json").body(self.body())
    }
}

impl From<tokio_postgres::Error> for ApiError {
    fn from(err: tokio_postgres::Error) -> Self {
        classify_db_error(&err)
    }
}

impl From<deadpool_postgres::PoolError> for ApiError {
    fn from(err: deadpool_postgres::PoolError) -> Self {
        tracing::warn!(error = %err, "database pool error");
        ApiError::DatabaseUnavailable
    }
}

/// A lost or refused connection is the database being unavailable (503); an error
/// PostgreSQL raised about the statement itself is ours (500). Neither leaks SQL.
fn classify_db_error(err: &tokio_postgres::Error) -> ApiError {
    match err.code() {
        Some(code) => {
            let class = &code.code()[..2];
            // 08: connection exception, 53: insufficient resources, 57: operator
            // intervention (shutdown, cancel, statement_timeout), 40:
            // serialization/deadlock, 55P03: lock_timeout (a table held elsewhere).
            if matches!(class, "08" | "53" | "57" | "40") || code.code() == "55P03" {
                tracing::warn!(error = %err, "database unavailable");
                ApiError::DatabaseUnavailable
            } else {
                tracing::error!(error = %err, "database statement failed");
                ApiError::Internal
            }
        }
        None => {
            tracing::warn!(error = %err, "database connection error");
            ApiError::DatabaseUnavailable
        }
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

impl From<crate::domain::accounts::AccountCheck> for ApiError {
    /// An account read that is not the expected pool: absent is 404, anything
    /// else 400 `invalid` (decisions §5).
    fn from(e: crate::domain::accounts::AccountCheck) -> Self {
        match e {
            crate::domain::accounts::AccountCheck::Absent => ApiError::PoolAccountNotFound,
            crate::domain::accounts::AccountCheck::Invalid => ApiError::Invalid,
        }
    }
}
