//! The one error type of the API. Every failure a handler can meet becomes one of
//! these, and `error_response` below is the only place that turns it into the
//! contract's `{"error": "<short reason>"}` body and HTTP status (docs/design.md §4.17, §4).
//! A server-side failure keeps its cause: logged once, at the edge that answers
//! (`error_response`, or the background task that met it), never in a body.
//!
//! Below it, `StartError`: what stops the service from starting.

use std::sync::Arc;

use actix_web::{HttpResponse, ResponseError, http::StatusCode};

use crate::wire::error::ErrorBody;

#[derive(Debug, Clone, PartialEq)]
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
    /// `invalid`, naming the field at fault (a body's `field`).
    InvalidField(&'static str),
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
    // 5xx, each with its cause
    Internal(Cause),
    RpcUnavailable(Cause),
    DatabaseUnavailable(Cause),
    /// This replica is draining before a stop (docs/design.md §13): a new stream
    /// is sent elsewhere by the balancer (503, Retry-After).
    Draining,
}

/// Why a server-side failure happened: the source error (or a description of
/// what went wrong) for the log, never for a body.
#[derive(Clone)]
pub struct Cause(Arc<dyn std::error::Error + Send + Sync>);

impl<E: Into<Box<dyn std::error::Error + Send + Sync>>> From<E> for Cause {
    fn from(e: E) -> Self {
        Cause(Arc::from(e.into()))
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(e) = source {
            write!(f, ": {e}")?;
            source = e.source();
        }
        Ok(())
    }
}

impl std::fmt::Debug for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

/// Two causes are equal when they say the same (tests compare errors).
impl PartialEq for Cause {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl ApiError {
    /// 500 `internal error`, because of `cause`.
    pub fn internal(cause: impl Into<Cause>) -> Self {
        ApiError::Internal(cause.into())
    }

    /// 502 `rpc unavailable`, because of `cause`.
    pub fn rpc(cause: impl Into<Cause>) -> Self {
        ApiError::RpcUnavailable(cause.into())
    }

    /// 503 `database unavailable`, because of `cause`.
    pub fn database(cause: impl Into<Cause>) -> Self {
        ApiError::DatabaseUnavailable(cause.into())
    }

    /// The cause of a server-side failure.
    pub fn cause(&self) -> Option<&Cause> {
        match self {
            ApiError::Internal(c)
            | ApiError::RpcUnavailable(c)
            | ApiError::DatabaseUnavailable(c) => Some(c),
            _ => None,
        }
    }
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
            ApiError::Invalid | ApiError::InvalidField(_) => "invalid".into(),
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
            ApiError::Internal(_) => "internal error".into(),
            ApiError::RpcUnavailable(_) => "rpc unavailable".into(),
            ApiError::DatabaseUnavailable(_) => "database unavailable".into(),
            ApiError::Draining => "draining".into(),
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
            | ApiError::Invalid
            | ApiError::InvalidField(_) => StatusCode::BAD_REQUEST,
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
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::RpcUnavailable(_) => StatusCode::BAD_GATEWAY,
            ApiError::DatabaseUnavailable(_) | ApiError::Draining => {
                StatusCode::SERVICE_UNAVAILABLE
            }
        }
    }
}

impl ApiError {
    /// The JSON body `{"error": "<message>"}`.
    pub fn body(&self) -> Vec<u8> {
        let field = match self {
            ApiError::InvalidField(field) => Some((*field).to_string()),
            _ => None,
        };
        serde_json::to_vec(&ErrorBody {
            error: self.message(),
            field,
        })
        .expect("a string field serializes")
    }
}

/// The message, and for a server-side failure its cause: for logs (a body
/// carries `message()` alone).
impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())?;
        match self.cause() {
            Some(cause) => write!(f, " ({cause})"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for ApiError {}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status()
    }

    fn error_response(&self) -> HttpResponse {
        // The edge of a request: its cause is logged here, once.
        match self {
            ApiError::Internal(cause) => tracing::error!(%cause, "internal error"),
            ApiError::RpcUnavailable(cause) => tracing::warn!(%cause, "rpc unavailable"),
            ApiError::DatabaseUnavailable(cause) => tracing::warn!(%cause, "database unavailable"),
            _ => {}
        }
        let mut response = HttpResponse::build(self.status());
        match self {
            ApiError::RateLimited { retry_after_secs } => {
                response.insert_header(("Retry-After", retry_after_secs.to_string()));
            }
            ApiError::Draining => {
                response.insert_header(("Retry-After", "1"));
                // The balancer's next attempt goes to another replica.
                response.force_close();
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

/// The store's two failures: the database away (503) or ours (500), the
/// cause kept for the log (docs/design.md §4.17).
impl From<crate::store::error::DbError> for ApiError {
    fn from(err: crate::store::error::DbError) -> Self {
        use crate::store::error::DbError;
        match err {
            DbError::Unavailable(cause) => ApiError::database(cause),
            DbError::Failed(cause) => ApiError::internal(cause),
        }
    }
}

/// An actor's failure: the store's as the store's, the chain's RPC 502,
/// anything else ours.
impl From<crate::actors::error::ActorError> for ApiError {
    fn from(err: crate::actors::error::ActorError) -> Self {
        use crate::actors::error::ActorError;
        match err {
            ActorError::Store(err) => err.into(),
            ActorError::Rpc(cause) => ApiError::rpc(cause),
            ActorError::Internal(cause) => ApiError::internal(cause),
        }
    }
}

/// An actor that could not take or answer a message (stopped, or its mailbox full).
impl From<actix::MailboxError> for ApiError {
    fn from(err: actix::MailboxError) -> Self {
        crate::actors::error::ActorError::from(err).into()
    }
}

/// A reply that never came: its sender was dropped unanswered.
impl From<tokio::sync::oneshot::error::RecvError> for ApiError {
    fn from(err: tokio::sync::oneshot::error::RecvError) -> Self {
        crate::actors::error::ActorError::from(err).into()
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

impl From<crate::ingest::Refused> for ApiError {
    /// A pool read or registration refused: absent is 404, not its authority
    /// 401, anything else 400 `invalid` (docs/design.md §4.8, §4.9).
    fn from(e: crate::ingest::Refused) -> Self {
        use crate::ingest::Refused;
        match e {
            Refused::Absent => ApiError::PoolAccountNotFound,
            Refused::Invalid => ApiError::Invalid,
            Refused::NotTheAuthority => ApiError::NotAuthorized,
        }
    }
}

impl From<crate::domain::accounts::AccountCheck> for ApiError {
    /// An account read that is not the expected pool: absent is 404, anything
    /// else 400 `invalid` (docs/design.md §4.8, §4.9).
    fn from(e: crate::domain::accounts::AccountCheck) -> Self {
        match e {
            crate::domain::accounts::AccountCheck::Absent => ApiError::PoolAccountNotFound,
            crate::domain::accounts::AccountCheck::Invalid => ApiError::Invalid,
        }
    }
}

impl From<crate::engine::risk::RiskError> for ApiError {
    /// The risk lens (docs/design.md §10): an unknown pool is 404, an
    /// unpriced one 400 `invalid`.
    fn from(e: crate::engine::risk::RiskError) -> Self {
        use crate::engine::risk::RiskError;
        match e {
            RiskError::UnknownPool => ApiError::NotFound,
            RiskError::Unpriced => ApiError::Invalid,
        }
    }
}

/// The operator commands' errors (`lendex migrate`, `admin`, `demo`): any
/// error, its sources kept, printed whole by `main`.
pub type CliResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// What stops the service from starting: settings, the database's address or
/// its migrations, the listening socket.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("bad configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Database(#[from] crate::store::error::SetupError),
    #[error("migration failed: {0}")]
    Migration(#[source] crate::store::error::DbError),
    #[error("cannot listen on {bind}: {source}")]
    Listen {
        bind: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the server stopped: {0}")]
    Serve(#[source] std::io::Error),
}
