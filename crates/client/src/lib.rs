//! A typed client of Lendex (docs/design.md §4, §5, §11): every public route
//! answered in the wire types, long polls with ETags (`poll`), the unhealthy
//! stream followed across reconnects and replicas (`feed`), and the signed
//! admin calls with a Solana keypair (`signed`, `keypair`). `lendex remote`,
//! the load generator and the tests talk to Lendex through it.
//!
//! ```no_run
//! # async fn run() -> Result<(), lendex_client::Error> {
//! let lendex = lendex_client::Client::new("http://127.0.0.1:8080");
//! let mut feed = lendex.feed(&lendex_client::Query::new());
//! loop {
//!     let event = feed.next().await?;
//!     println!("{} {}", event.name, event.data);
//! }
//! # }
//! ```

mod error;
mod feed;
pub mod keypair;
mod query;
pub mod routes;
mod signed;
pub mod sse;
mod webhooks;

use std::time::Duration;

use serde::de::DeserializeOwned;

pub use error::Error;
pub use feed::{Event, Feed};
pub use query::Query;
pub use routes::Polled;
pub use signed::Signer;
pub use webhooks::NewWebhook;

/// The wire types the answers come in.
pub use lendex_wire as wire;

/// A Lendex service at one address (a replica or the balancer in front).
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    /// A client of the service at `base` (`http://host:port`), each request
    /// given at most 30 s.
    pub fn new(base: &str) -> Client {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("a client with a timeout builds");
        Client::with_http(base, http)
    }

    /// With a `reqwest::Client` of the caller's (its pool, its timeouts).
    /// Long polls and the stream need no overall timeout of their own.
    pub fn with_http(base: &str, http: reqwest::Client) -> Client {
        Client {
            http,
            base: base.trim_end_matches('/').to_string(),
        }
    }

    /// The service's address.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Follows GET /api/positions/unhealthy/stream with `query`, from now
    /// (reconnecting by itself, `feed`).
    pub fn feed(&self, query: &Query) -> Feed {
        Feed::follow(self.clone(), query)
    }

    /// `GET path` (with its query), its 2xx body as `T`.
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, Error> {
        let response = self.send(self.http.get(self.url(path))).await?;
        json(response).await
    }

    /// `method path` with a JSON body, its 2xx body as `T`.
    pub(crate) async fn send_json<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: &serde_json::Value,
    ) -> Result<T, Error> {
        let request = self
            .http
            .request(method, self.url(path))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
        json(self.send(request).await?).await
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends; a non-2xx answer becomes `Error::Api` (304 is the caller's).
    async fn send(&self, request: reqwest::RequestBuilder) -> Result<reqwest::Response, Error> {
        let response = request
            .send()
            .await
            .map_err(|e| Error::Transport(format!("{}: {e}", self.base)))?;
        let status = response.status().as_u16();
        if (200..300).contains(&status) || status == 304 {
            return Ok(response);
        }
        Err(api_error(response).await)
    }
}

/// A refusal's status, its body's `error` and its `Retry-After`.
pub(crate) async fn api_error(response: reqwest::Response) -> Error {
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let text = response.text().await.unwrap_or_default();
    // Not the spec's body (a proxy's page in front of a restarting service):
    // its text is the reason, and its status still says whether to retry.
    let (error, field) = match serde_json::from_str::<lendex_wire::error::ErrorBody>(&text) {
        Ok(body) => (body.error, body.field),
        Err(_) => (text, None),
    };
    Error::Api {
        status,
        error,
        retry_after,
        field,
    }
}

/// A 2xx body as `T`.
async fn json<T: DeserializeOwned>(response: reqwest::Response) -> Result<T, Error> {
    let bytes = response
        .bytes()
        .await
        .map_err(|e| Error::Transport(format!("answer cut short: {e}")))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| Error::Unexpected(format!("{e}: {}", String::from_utf8_lossy(&bytes))))
}
