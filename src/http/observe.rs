//! What every answered request leaves behind: its series in the HTTP metrics
//! and, when INFO is on, one log line. Used by the App's middleware and by
//! `polls::answer`, so both paths are counted and logged alike.

use std::time::Instant;

use actix_http::Method;

/// A request being answered, from its first byte of handling.
pub struct Observed {
    started: Instant,
    /// Method and path for the log line; nothing is copied when INFO is off
    /// (the feed's pollers make this the hottest path).
    logged: Option<(Method, String)>,
}

impl Observed {
    pub fn start(method: &Method, path: &str) -> Self {
        Observed {
            started: Instant::now(),
            logged: tracing::enabled!(tracing::Level::INFO)
                .then(|| (method.clone(), path.to_string())),
        }
    }

    /// Counts the answer under `route`: the route's pattern, never the path (a
    /// path holds a wallet), or "unmatched".
    pub fn finish(self, route: &str, method: &Method, status: u16) {
        let took = self.started.elapsed();
        crate::metrics::http::record(route, method.as_str(), status, took);
        if let Some((method, path)) = self.logged {
            let latency_ms = took.as_secs_f64() * 1000.0;
            if QUIET.contains(&route) && status < 400 {
                tracing::debug!(%method, %path, status, latency_ms, "request");
            } else {
                tracing::info!(%method, %path, status, latency_ms, "request");
            }
        }
    }
}

/// Routes machines poll (a start script waiting for health, a scraper): their
/// answered requests are logged at DEBUG, so waiting fills no log. Failures
/// stay at INFO.
const QUIET: [&str; 2] = ["/api/health", "/metrics"];
