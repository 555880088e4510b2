//! What every answered request leaves behind: its series in the HTTP metrics
//! and one log line, at the level docs/design.md §1 gives it. Used by the App's
//! middleware and by `polls::answer`, so both paths are counted and logged
//! alike.
//!
//! A liquidator fleet polls the same few routes tens of thousands of times a
//! second; an INFO line for each would cost a third of the 304 path and fill
//! hundreds of GB of log a day. Their successful reads are DEBUG (the metrics
//! still count every one); writes, errors and slow requests stay INFO.

use std::time::{Duration, Instant};

use actix_http::Method;

/// A request being answered, from its first byte of handling. Nothing is
/// copied until the line is known to be written.
pub struct Observed {
    started: Instant,
}

/// How a finished request is logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    Info,
    Debug,
}

impl Observed {
    pub fn start() -> Self {
        Observed {
            started: Instant::now(),
        }
    }

    /// Counts the answer under `route` (the route's pattern, never the path: a
    /// path holds a wallet; or "unmatched") and logs it with its `path`.
    pub fn finish(self, answered: Answered<'_>, slow_after: Duration) {
        let took = self.started.elapsed();
        let Answered {
            route,
            polled,
            method,
            path,
            held,
            status,
        } = answered;
        crate::metrics::http::record(route, method.as_str(), status, took);
        let latency_ms = took.as_secs_f64() * 1000.0;
        match line_for(polled, method, status, took, held, slow_after) {
            Line::Info => tracing::info!(%method, %path, status, latency_ms, "request"),
            Line::Debug => tracing::debug!(%method, %path, status, latency_ms, "request"),
        }
    }
}

/// A request as it was answered.
pub struct Answered<'a> {
    pub route: &'a str,
    /// The route is one machines poll (`polls::is_polled`).
    pub polled: bool,
    pub method: &'a Method,
    pub path: &'a str,
    /// Whether it asked to be held (`wait_ms`): a long poll's wait is its
    /// purpose, not slowness.
    pub held: bool,
    pub status: u16,
}

/// Whether a request with this query may be held as a long poll.
pub fn asks_to_wait(query: &str) -> bool {
    query
        .split('&')
        .any(|pair| pair.split('=').next() == Some("wait_ms"))
}

/// The level of a request's line: DEBUG for the successful, timely reads of
/// the routes machines poll (`polled`); INFO for the rest (writes, errors,
/// slow answers).
pub fn line_for(
    polled: bool,
    method: &Method,
    status: u16,
    took: Duration,
    held: bool,
    slow_after: Duration,
) -> Line {
    let read = method == Method::GET || method == Method::HEAD;
    let slow = took > slow_after && !held;
    if read && status < 400 && !slow && polled {
        Line::Debug
    } else {
        Line::Info
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLOW: Duration = Duration::from_millis(100);
    const QUICK: Duration = Duration::from_millis(3);

    fn level(route: &str, method: Method, status: u16, took: Duration, held: bool) -> Line {
        let polled = crate::http::polls::is_polled(route);
        line_for(polled, &method, status, took, held, SLOW)
    }

    #[test]
    fn the_polled_reads_are_debug_when_they_succeed_in_time() {
        for route in crate::http::polls::POLLED {
            assert_eq!(
                level(route, Method::GET, 200, QUICK, false),
                Line::Debug,
                "{route}"
            );
            assert_eq!(
                level(route, Method::HEAD, 304, QUICK, false),
                Line::Debug,
                "{route}"
            );
        }
    }

    #[test]
    fn writes_errors_and_slow_answers_are_info() {
        let route = "/api/liquidations";
        assert_eq!(level(route, Method::GET, 400, QUICK, false), Line::Info);
        assert_eq!(level(route, Method::GET, 503, QUICK, false), Line::Info);
        assert_eq!(level(route, Method::GET, 200, SLOW * 2, false), Line::Info);
        assert_eq!(
            level("/api/pools/init", Method::POST, 201, QUICK, false),
            Line::Info
        );
        assert_eq!(
            level("/api/transactions", Method::POST, 200, QUICK, false),
            Line::Info
        );
        assert_eq!(
            level("/api/admin/audit", Method::GET, 200, QUICK, false),
            Line::Info
        );
        assert_eq!(
            level("unmatched", Method::GET, 404, QUICK, false),
            Line::Info
        );
    }

    #[test]
    fn a_held_poll_is_not_slow_for_its_wait() {
        let route = "/api/positions/unhealthy";
        assert_eq!(level(route, Method::GET, 304, SLOW * 50, true), Line::Debug);
        assert_eq!(level(route, Method::GET, 200, SLOW * 50, true), Line::Debug);
    }

    #[test]
    fn wait_ms_is_found_as_a_parameter_only() {
        assert!(asks_to_wait("wait_ms=100"));
        assert!(asks_to_wait("limit=5&wait_ms=100"));
        assert!(asks_to_wait("wait_ms"));
        assert!(!asks_to_wait("limit=5"));
        assert!(!asks_to_wait("xwait_ms=5"));
        assert!(!asks_to_wait(""));
    }
}
