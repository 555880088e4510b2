//! One interface for live chain updates, whichever source carries them: the
//! RPC node's websocket (`chain::websocket`) or a Yellowstone gRPC stream
//! (`chain::grpc`). A connection reports `StreamEvent`s and ends with an
//! `Ended`; what is done with the updates is `actors::chain_stream`'s, the
//! same for both.
//!
//! Reconnecting (decisions §14): attempts back off with jitter, doubling to
//! at most 5 s and never more than 3 a second. While a node that refused the
//! connection itself is waited out, it is asked every half second whether it
//! listens again (a TCP connect, nothing sent), so the feed catches up within
//! 2 s of its return; a node that answers and then fails gets the backoff.

use std::time::Duration;

use rand::Rng;

use crate::domain::pubkey::Pubkey;

/// An account as a source carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notified {
    /// The slot of the write (gRPC), or the notification's context slot
    /// (websocket: some nodes send the subscription's).
    pub slot: u64,
    pub pubkey: Pubkey,
    pub owner: Pubkey,
    /// The account's lamports (0: closed), when the source says.
    pub lamports: Option<u64>,
    pub data: Vec<u8>,
    /// The write's version within its slot (gRPC only): a later write of the
    /// same slot has a higher one.
    pub write_version: Option<u64>,
}

/// What a connection reports while it lives.
#[derive(Debug)]
pub enum StreamEvent {
    /// Subscribed. Unless `replayed` (the source resends everything from the
    /// last slot it delivered), updates may have been missed: reconcile.
    Subscribed {
        replayed: bool,
    },
    Account(Notified),
    /// The source's view of the chain reached this slot (gRPC slot updates).
    Slot(u64),
}

/// Why a connection ended, and whether the node was reached at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    pub reason: String,
    /// The TCP connection was made (the node listens): the next attempt waits
    /// out the backoff. Not reached: the node is asked whether it is back.
    pub reached: bool,
}

impl Ended {
    pub fn reached(reason: impl Into<String>) -> Ended {
        Ended {
            reason: reason.into(),
            reached: true,
        }
    }

    pub fn unreachable(reason: impl Into<String>) -> Ended {
        Ended {
            reason: reason.into(),
            reached: false,
        }
    }
}

/// The first wait after a failure, and the longest.
pub const BACKOFF_FIRST: Duration = Duration::from_millis(400);
pub const BACKOFF_LAST: Duration = Duration::from_secs(5);
/// Never more than 3 attempts a second.
pub const ATTEMPTS_APART: Duration = Duration::from_millis(334);
/// How often a node that refused connections is asked whether it is back.
pub const PROBE_EVERY: Duration = Duration::from_millis(500);
/// A connection that lived this long starts the backoff over.
pub const STABLE_AFTER: Duration = Duration::from_secs(10);

/// The reconnect schedule: doubling waits with ±20% jitter, within
/// [`ATTEMPTS_APART`, `BACKOFF_LAST`].
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            next: BACKOFF_FIRST,
        }
    }
}

impl Backoff {
    /// The wait before the next attempt, after a connection that lived
    /// `lived`; `jitter` in [0.8, 1.2].
    pub fn wait(&mut self, lived: Duration, jitter: f64) -> Duration {
        if lived >= STABLE_AFTER {
            self.next = BACKOFF_FIRST;
        }
        let wait = self
            .next
            .mul_f64(jitter.clamp(0.8, 1.2))
            .clamp(ATTEMPTS_APART, BACKOFF_LAST);
        self.next = (self.next * 2).min(BACKOFF_LAST);
        wait
    }

    /// `wait` with the jitter drawn here.
    pub fn wait_jittered(&mut self, lived: Duration) -> Duration {
        let jitter = rand::thread_rng().gen_range(0.8..=1.2);
        self.wait(lived, jitter)
    }
}

/// The host and port a URL connects to (default ports by scheme).
pub fn endpoint_of(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let default_port = match scheme {
        "https" | "wss" => 443,
        "http" | "ws" => 80,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    if authority.is_empty() {
        return None;
    }
    // [v6]:port, [v6], host:port, host
    if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => default_port,
            None => return None,
        };
        return Some((host.to_string(), port));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => Some((host.to_string(), port.parse().ok()?)),
        None => Some((authority.to_string(), default_port)),
    }
}

/// Whether something listens at the URL's host and port (a TCP connect
/// within a second; nothing is sent).
pub async fn listens(url: &str) -> bool {
    let Some((host, port)) = endpoint_of(url) else {
        return false;
    };
    let connect = tokio::net::TcpStream::connect((host.as_str(), port));
    matches!(
        tokio::time::timeout(Duration::from_secs(1), connect).await,
        Ok(Ok(_))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_to_five_seconds_never_below_a_third() {
        let mut b = Backoff::default();
        let waits: Vec<u128> = (0..7)
            .map(|_| b.wait(Duration::ZERO, 1.0).as_millis())
            .collect();
        assert_eq!(waits, [400, 800, 1600, 3200, 5000, 5000, 5000]);
        // Jitter never brings two attempts closer than a third of a second,
        // nor a wait past 5 s.
        let mut b = Backoff::default();
        assert_eq!(b.wait(Duration::ZERO, 0.8), ATTEMPTS_APART);
        for _ in 0..10 {
            assert!(b.wait(Duration::ZERO, 1.2) <= BACKOFF_LAST);
        }
        // A connection that held starts over.
        assert_eq!(b.wait(STABLE_AFTER, 1.0), BACKOFF_FIRST);
    }

    #[test]
    fn endpoints() {
        let e = |u: &str| endpoint_of(u);
        assert_eq!(e("http://127.0.0.1:8900"), Some(("127.0.0.1".into(), 8900)));
        assert_eq!(e("ws://localhost/x"), Some(("localhost".into(), 80)));
        assert_eq!(
            e("https://grpc.example.com"),
            Some(("grpc.example.com".into(), 443))
        );
        assert_eq!(
            e("wss://user:pw@rpc.example.com:8443/key?x=1"),
            Some(("rpc.example.com".into(), 8443))
        );
        assert_eq!(e("http://[::1]:10000"), Some(("::1".into(), 10000)));
        assert_eq!(e("https://[::1]"), Some(("::1".into(), 443)));
        assert_eq!(e("grpc.example.com:443"), None);
        assert_eq!(e("ftp://x"), None);
        assert_eq!(e("http://x:notaport"), None);
        assert_eq!(e("http://"), None);
    }
}
