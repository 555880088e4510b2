//! A replica's way out from behind a load balancer (docs/design.md §13). On SIGTERM
//! it first fails its health check while still answering, so the balancer
//! stops sending it new requests without a client seeing an error; after
//! `server.drain_ms` it closes its streams and held polls, whose clients
//! reconnect (with their Last-Event-ID) through the balancer to another
//! replica, and stops as §1 says.

use tokio::sync::watch;

/// Where a replica is on its way out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Serving,
    /// Failing its health check, still answering.
    Draining,
    /// Streams and held polls are being closed; the server stops.
    Closing,
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
        self.phase.send_if_modified(|phase| {
            let serving = *phase == Phase::Serving;
            if serving {
                *phase = Phase::Draining;
            }
            serving
        });
    }

    /// The balancer has had its time: held polls are answered now.
    pub fn close(&self) {
        self.phase.send_replace(Phase::Closing);
    }

    /// Draining or closing: health fails and new streams are refused (the
    /// balancer retries them elsewhere).
    pub fn is_draining(&self) -> bool {
        self.phase() != Phase::Serving
    }

    /// Resolves once held polls are to be answered (the replica is closing).
    pub async fn closing(&self) {
        let mut phase = self.phase.subscribe();
        let _ = phase.wait_for(|phase| *phase == Phase::Closing).await;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[actix_rt::test]
    async fn a_drain_fails_health_then_releases_held_polls() {
        let drain = Drain::default();
        assert_eq!(drain.phase(), Phase::Serving);
        assert!(!drain.is_draining());

        drain.begin();
        assert_eq!(drain.phase(), Phase::Draining);
        assert!(drain.is_draining());
        let waiting = tokio::time::timeout(Duration::from_millis(50), drain.closing()).await;
        assert!(
            waiting.is_err(),
            "held polls are released only when closing"
        );

        drain.close();
        // A late second signal does not reopen the drain.
        drain.begin();
        assert_eq!(drain.phase(), Phase::Closing);
        tokio::time::timeout(Duration::from_secs(1), drain.closing())
            .await
            .expect("closing releases held polls");
    }
}
