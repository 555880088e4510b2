//! What a call can end in besides its answer.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The service answered with one of the spec's error bodies.
    Api {
        status: u16,
        /// The body's `error`: `invalid`, `rate limited`, `nonce invalid or expired`, ...
        error: String,
        /// Seconds to wait, when the service said (429, 503).
        retry_after: Option<u64>,
        /// The body's `field`: which field an `invalid` faults, where the
        /// body has many (a webhook's).
        field: Option<String>,
    },
    /// The service could not be reached, or its answer was cut short.
    Transport(String),
    /// An answer that is not what the route promises.
    Unexpected(String),
    /// Refused here, before anything was sent: a keypair file that is not
    /// one, or a server asking to sign another message than the canonical one.
    Refused(String),
}

impl Error {
    /// Worth trying again later: the service away, busy, draining or limiting.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Api { status, .. } => matches!(status, 429 | 502 | 503 | 504),
            Error::Transport(_) => true,
            Error::Unexpected(_) | Error::Refused(_) => false,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Api {
                status,
                error,
                field: Some(field),
                ..
            } => write!(f, "{status}: {error} ({field})"),
            Error::Api { status, error, .. } => write!(f, "{status}: {error}"),
            Error::Transport(e) => write!(f, "unreachable: {e}"),
            Error::Unexpected(e) => write!(f, "unexpected answer: {e}"),
            Error::Refused(e) => write!(f, "refused: {e}"),
        }
    }
}

impl std::error::Error for Error {}
