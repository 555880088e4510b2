//! A replica's way out from behind a load balancer (decisions §13). On SIGTERM
//! it first fails its health check while still answering, so the balancer
//! stops sending it new requests without a client seeing an error; after
//! `server.drain_ms` it closes its streams and held polls, whose clients
//! reconnect (with their Last-Event-ID) through the balancer to another
//! replica, and stops as §1 says.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::watch;

/// Where a replica is on its way out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Serving,
    /// Failing its health check, still answering; since this Unix millisecond.
    Draining {
        since_ms: u64,
    },
    /// Streams and held polls are being closed; the server stops.
    Closing {
        since_ms: u64,
    },
}

/// The phase, shared by the stop sequence (the one writer) and the handlers.
#[derive(Clone)]
pub struct Drain {
    phase: watch::Sender<Phase>,
}

impl Default for Drain {
    fn default() -> Self {
        Drain {
            phase: watch::Sender::new(Phase::Serving),
        }
    }
}

impl Drain {
    pub fn phase(&self) -> Phase {
        *self.phase.borrow()
    }

    /// Serving no longer: the health check fails from now on.
    pub fn begin(&self) {
        self.phase.send_if_modified(|phase| match phase {
            Phase::Serving => {
                *phase = Phase::Draining { since_ms: now_ms() };
                true
            }
            _ => false,
        });
    }

    /// The balancer has had its time: held polls are answered now.
    pub fn close(&self) {
        let since_ms = match self.phase() {
            Phase::Draining { since_ms } => since_ms,
            _ => now_ms(),
        };
        self.phase.send_replace(Phase::Closing { since_ms });
    }

    /// Draining or closing: health fails and new streams are refused (the
    /// balancer retries them elsewhere).
    pub fn is_draining(&self) -> bool {
        self.phase() != Phase::Serving
    }

    /// Resolves once held polls are to be answered (the replica is closing).
    pub async fn closing(&self) {
        let mut phase = self.phase.subscribe();
        let _ = phase
            .wait_for(|phase| matches!(phase, Phase::Closing { .. }))
            .await;
    }

    /// The drain's start, for health's `since`.
    pub fn since_ms(&self) -> Option<u64> {
        match self.phase() {
            Phase::Serving => None,
            Phase::Draining { since_ms } | Phase::Closing { since_ms } => Some(since_ms),
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix_rt::test]
    async fn a_drain_fails_health_then_releases_held_polls() {
        let drain = Drain::default();
        assert_eq!(drain.phase(), Phase::Serving);
        assert!(!drain.is_draining());
        assert_eq!(drain.since_ms(), None);

        drain.begin();
        let since = drain.since_ms().expect("draining");
        assert!(drain.is_draining());
        // A second signal does not restart the clock.
        drain.begin();
        assert_eq!(drain.since_ms(), Some(since));
        let waiting = tokio::time::timeout(Duration::from_millis(50), drain.closing()).await;
        assert!(
            waiting.is_err(),
            "held polls are released only when closing"
        );

        drain.close();
        assert_eq!(drain.phase(), Phase::Closing { since_ms: since });
        tokio::time::timeout(Duration::from_secs(1), drain.closing())
            .await
            .expect("closing releases held polls");
    }
}
