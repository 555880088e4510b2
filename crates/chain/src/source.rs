//! One interface for live chain updates, whichever source carries them: the
//! RPC node's websocket (`chain::websocket`) or a Yellowstone gRPC stream
//! (`chain::grpc`). A connection reports `StreamEvent`s and ends with an
//! `Ended`; what is done with the updates is `actors::chain_stream`'s, the
//! same for both.
//!
//! Reconnecting (docs/design.md §14): attempts back off with jitter, doubling to
//! at most 5 s and never more than 3 a second. While it waits, the node is
//! asked every half second whether it answers its protocol (a handshake and
//! no subscription: `wait_out`), and tried at once when it answers again
//! after it did not, however it failed (refused, accepted and closed,
//! silent), so the feed catches up within 2 s of its return. A node that
//! answers every probe and still fails gets the whole backoff.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use tokio::sync::watch;

use lendex_domain::forks::SlotStatus;
use lendex_domain::pubkey::Pubkey;

pub use lendex_domain::raw::AccountUpdate;

/// What a connection reports while it lives.
#[derive(Debug)]
pub enum StreamEvent {
    /// Subscribed. Unless `replayed` (the source resends everything from the
    /// last slot it delivered), updates may have been missed: reconcile.
    Subscribed {
        replayed: bool,
    },
    Account(AccountUpdate),
    /// A slot's status (gRPC slot updates).
    Slot(SlotUpdate),
}

/// A slot status as a source carries it, with the slot's parent when given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotUpdate {
    pub slot: u64,
    pub parent: Option<u64>,
    pub status: SlotStatus,
}

/// Why a connection ended, and whether the node answered its protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    pub reason: String,
    /// The node answered its protocol (a handshake): it failed after, and a
    /// probe that succeeds does not cut the backoff short until one failed.
    /// Not reached: the first probe that succeeds ends the wait.
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

/// Waits out `wait` after a connection that ended: returns early when the
/// node, not answering before (`answered` false, or a probe that failed
/// meanwhile), answers a probe again. Probes every `PROBE_EVERY`, so never
/// sooner than that: within the 3 attempts a second.
pub async fn wait_out<F, Fut>(wait: Duration, answered: bool, mut probe: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + wait;
    let mut was_down = !answered;
    loop {
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return;
        }
        tokio::time::sleep(PROBE_EVERY.min(deadline - now)).await;
        if tokio::time::Instant::now() >= deadline {
            return;
        }
        let up = probe().await;
        if up && was_down {
            return;
        }
        was_down |= !up;
    }
}

/// The first wait after a failure, and the longest.
pub const BACKOFF_FIRST: Duration = Duration::from_millis(400);
pub const BACKOFF_LAST: Duration = Duration::from_secs(5);
/// Never more than 3 attempts a second.
pub const ATTEMPTS_APART: Duration = Duration::from_millis(334);
/// How often a node backed off from is asked whether it answers (`wait_out`).
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

/// The feeds the health cache names, as the chain work reads them.
pub type NamedFeeds = watch::Receiver<Arc<BTreeSet<Pubkey>>>;

/// The next set named, when one is watched (never, else).
pub(crate) async fn named_changed(feeds: &mut Option<NamedFeeds>) -> Option<Arc<BTreeSet<Pubkey>>> {
    match feeds {
        Some(named) => match named.changed().await {
            Ok(()) => Some(named.borrow_and_update().clone()),
            // The cache is gone (the service stops): nothing more to follow.
            Err(_) => std::future::pending().await,
        },
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// How long `wait_out` waits, in paused time, with probes answering as
    /// `answers` says one after the other (then as its last).
    async fn waited(wait_ms: u64, answered: bool, answers: &[bool]) -> (Duration, usize) {
        let asked = RefCell::new(0usize);
        let start = tokio::time::Instant::now();
        wait_out(Duration::from_millis(wait_ms), answered, || {
            let n = *asked.borrow();
            *asked.borrow_mut() += 1;
            let up = answers[n.min(answers.len() - 1)];
            async move { up }
        })
        .await;
        (start.elapsed(), *asked.borrow())
    }

    #[tokio::test(start_paused = true)]
    async fn a_node_back_after_not_answering_is_tried_at_the_next_probe() {
        // Not answering at the end (refused, or accepted and closed): the
        // first probe that answers ends the 5 s wait.
        let (took, probes) = waited(5_000, false, &[false, false, true]).await;
        assert_eq!((took, probes), (Duration::from_millis(1_500), 3));
        // It answered, then stopped during the wait, then came back.
        let (took, _) = waited(5_000, true, &[true, false, false, true]).await;
        assert_eq!(took, Duration::from_millis(2_000));
        // Never sooner than one probe period: within 3 attempts a second.
        let (took, _) = waited(5_000, false, &[true]).await;
        assert_eq!(took, PROBE_EVERY);
        assert!(PROBE_EVERY >= ATTEMPTS_APART);
    }

    #[tokio::test(start_paused = true)]
    async fn a_node_that_answers_every_probe_gets_the_whole_backoff() {
        let (took, _) = waited(5_000, true, &[true]).await;
        assert_eq!(took, Duration::from_millis(5_000));
        // Down all along: the backoff, then the attempt.
        let (took, _) = waited(3_200, false, &[false]).await;
        assert_eq!(took, Duration::from_millis(3_200));
    }

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
