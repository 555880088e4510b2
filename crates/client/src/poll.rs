//! Conditional reads and long polls (docs/design.md §11): a read names the
//! ETag it holds; the service answers 304 when nothing changed, or, asked
//! to wait (`wait_ms`), holds the request until the answer changes or the
//! wait is over. A bot polls with the ETag of its last answer and never
//! parses a body twice.

use std::time::Duration;

use serde::de::DeserializeOwned;

use crate::{Client, Error, Query};

/// The answer of a conditional read.
#[derive(Debug, Clone, PartialEq)]
pub enum Polled<T> {
    /// A new answer, with the ETag to name next time.
    Changed { body: T, etag: String },
    /// The same as the ETag named (304).
    NotModified,
}

impl<T> Polled<T> {
    /// The new answer, if any.
    pub fn changed(self) -> Option<(T, String)> {
        match self {
            Polled::Changed { body, etag } => Some((body, etag)),
            Polled::NotModified => None,
        }
    }
}

impl Client {
    /// `GET path` (one of `routes::path`, or any GET route) with `query`,
    /// conditional on `etag`; with `wait`, held up to that long for a change
    /// (at most 30 s: more is refused as `invalid`).
    pub async fn poll<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &Query,
        etag: Option<&str>,
        wait: Option<Duration>,
    ) -> Result<Polled<T>, Error> {
        let query = query
            .clone()
            .with_some("wait_ms", wait.map(|w| w.as_millis()));
        let mut request = self
            .http
            .get(self.url(&format!("{path}{}", query.encode())));
        if let Some(etag) = etag {
            request = request.header(reqwest::header::IF_NONE_MATCH, etag);
        }
        if let Some(wait) = wait {
            // However the caller's client is set up, the hold is not cut short.
            request = request.timeout(wait + Duration::from_secs(10));
        }
        let response = self.send(request).await?;
        if response.status().as_u16() == 304 {
            return Ok(Polled::NotModified);
        }
        let etag = response
            .headers()
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
            .ok_or_else(|| Error::Unexpected(format!("{path} answered without an ETag")))?;
        Ok(Polled::Changed {
            body: crate::json(response).await?,
            etag,
        })
    }
}
