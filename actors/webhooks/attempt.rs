//! One attempt at a delivery (docs/design.md §18): the target judged again
//! (a name's answer can change), the request signed as Standard Webhooks
//! signs, sent to an address that was judged (the client is pinned to it,
//! so a second lookup cannot lead elsewhere), no redirect followed, the
//! whole exchange bounded by `webhooks.timeout_ms` and at most 64 KiB of
//! the answer read (a longer one fails the attempt).

use std::time::Duration;

use reqwest::redirect::Policy;

use super::targets::{Unreachable, resolve};
use crate::domain::webhooks::signature::Secret;
use crate::domain::webhooks::targets::{Host, Refused, target};

/// Bytes of an answer read at most.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// How long a target's name may take to resolve, at most.
const RESOLVE_WITHIN: Duration = Duration::from_secs(3);

/// How an attempt went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A 2xx, its answer read (up to the cap) to the end.
    Delivered(u16),
    /// 410 Gone: the receiver wants no more.
    Gone,
    /// Anything else: the status if one came, and why.
    Failed { status: Option<u16>, error: String },
}

/// What is sent.
pub struct Request<'a> {
    pub url: &'a str,
    pub secret: &'a Secret,
    pub delivery_id: &'a str,
    pub body: Vec<u8>,
}

/// Makes one attempt, never longer than `timeout` (plus the name's lookup).
pub async fn attempt(request: Request<'_>, allow_private: bool, timeout: Duration) -> Answer {
    let failed = |status: Option<u16>, error: String| Answer::Failed { status, error };
    let target = match target(request.url, allow_private) {
        Ok(target) => target,
        Err(refused) => return failed(None, refusal(refused)),
    };
    let addresses = match resolve(&target, allow_private, RESOLVE_WITHIN.min(timeout)).await {
        Ok(addresses) => addresses,
        Err(Unreachable::Refused(refused)) => return failed(None, refusal(refused)),
        Err(Unreachable::Unresolved(e)) => return failed(None, format!("unresolved: {e}")),
    };
    let mut client = reqwest::Client::builder()
        .redirect(Policy::none())
        .timeout(timeout)
        .pool_max_idle_per_host(0);
    if let Host::Domain(name) = &target.host {
        client = client.resolve_to_addrs(name, &addresses);
    }
    let client = match client.build() {
        Ok(client) => client,
        Err(e) => return failed(None, format!("client: {e}")),
    };
    let timestamp = chrono::Utc::now().timestamp();
    let signature = request
        .secret
        .sign(request.delivery_id, timestamp, &request.body);
    let sent = client
        .post(target.url)
        .header("webhook-id", request.delivery_id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .header("content-type", "application/json")
        .body(request.body)
        .send();
    // The client's timeout covers the answer's body too; this bounds the
    // rest (a connect that never completes).
    let exchange = async {
        let late = || format!("no answer within {timeout:?}");
        let mut response = sent.await.map_err(|e| match e.is_timeout() {
            true => (None, late()),
            false => (None, describe(&e)),
        })?;
        let status = response.status().as_u16();
        // Read to its end, never past the cap: a longer answer is a fault.
        let mut read = 0usize;
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => read += chunk.len(),
                Ok(None) => return Ok(status),
                Err(e) if e.is_timeout() => return Err((Some(status), late())),
                Err(e) => return Err((Some(status), format!("answer cut: {}", describe(&e)))),
            }
            if read > MAX_ANSWER_BYTES {
                return Err((Some(status), "answer over 64 KiB".to_string()));
            }
        }
    };
    match tokio::time::timeout(timeout, exchange).await {
        Err(_) => failed(None, format!("no answer within {timeout:?}")),
        Ok(Err((status, error))) => failed(status, error),
        Ok(Ok(410)) => Answer::Gone,
        Ok(Ok(status)) if (200..300).contains(&status) => Answer::Delivered(status),
        Ok(Ok(status)) => failed(Some(status), format!("answered {status}")),
    }
}

fn refusal(refused: Refused) -> String {
    match refused {
        Refused::Url => "refused: not an http(s) URL with a host".into(),
        Refused::Address(class) => format!("refused: a {} address", class.as_str()),
    }
}

/// A transport error in a line: its kind and its innermost cause.
fn describe(e: &reqwest::Error) -> String {
    let kind = if e.is_connect() {
        "connect failed"
    } else {
        "request failed"
    };
    let mut cause: &dyn std::error::Error = e;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    format!("{kind}: {cause}")
}
