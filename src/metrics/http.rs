//! The HTTP request series, `lendex_http_requests_total` and
//! `lendex_http_request_duration_seconds`. Every answered request lands here,
//! liquidator polls included, so these two are kept outside the `metrics`
//! facade: its histogram stores each sample until a scrape drains it (memory
//! that grows with traffic between scrapes) and its lookups format a key per
//! request. Here each worker thread counts into fixed buckets of its own
//! (relaxed atomics on lines no other core writes, no allocation once a series
//! is seen), and a scrape sums the threads.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::SECONDS_BUCKETS;

pub const HTTP_REQUESTS: &str = "lendex_http_requests_total";
pub const HTTP_DURATION: &str = "lendex_http_request_duration_seconds";

/// Upper bounds of the latency buckets, in nanoseconds (`SECONDS_BUCKETS`).
const BOUNDS_NANOS: [u64; SECONDS_BUCKETS.len()] = {
    let mut out = [0u64; SECONDS_BUCKETS.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = (SECONDS_BUCKETS[i] * 1e9) as u64;
        i += 1;
    }
    out
};

/// The method label: the standard methods by name, anything else "other", so
/// a client inventing methods cannot invent series.
pub fn method_label(method: &str) -> &'static str {
    const KNOWN: [&str; 9] = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE",
    ];
    KNOWN
        .into_iter()
        .find(|known| *known == method)
        .unwrap_or("other")
}

/// The bucket a duration falls in: the first bound at or above it (Prometheus'
/// `le`), or the last slot (+Inf) past them all.
fn bucket_of(took: Duration) -> usize {
    let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
    BOUNDS_NANOS.partition_point(|&bound| bound < nanos)
}

/// One series as one thread counts it. Buckets are not cumulative; the last
/// one is +Inf.
#[derive(Default)]
struct Counts {
    count: AtomicU64,
    sum_nanos: AtomicU64,
    buckets: [AtomicU64; SECONDS_BUCKETS.len() + 1],
}

#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    route: Box<str>,
    method: &'static str,
    status: u16,
}

/// Every thread's counts, for the scrape. Only a thread's first request of a
/// series takes this lock.
static ALL: Mutex<Vec<(Key, Arc<Counts>)>> = Mutex::new(Vec::new());

thread_local! {
    /// This thread's series, the most recently used first (a worker serving a
    /// poller finds its series at the front).
    static MINE: RefCell<Vec<(Key, Arc<Counts>)>> = const { RefCell::new(Vec::new()) };
}

/// Counts one answered request. `route` is the route's pattern ("unmatched"
/// when none matched), never the path: a path holds a wallet.
pub fn record(route: &str, method: &str, status: u16, took: Duration) {
    let method = method_label(method);
    MINE.with_borrow_mut(|mine| {
        let at = mine
            .iter()
            .position(|(k, _)| k.status == status && k.method == method && &*k.route == route);
        let at = match at {
            Some(at) => at,
            None => {
                let key = Key {
                    route: route.into(),
                    method,
                    status,
                };
                let counts = Arc::new(Counts::default());
                ALL.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((key.clone(), counts.clone()));
                mine.push((key, counts));
                mine.len() - 1
            }
        };
        if at > 0 {
            mine.swap(0, at);
        }
        let counts = &mine[0].1;
        counts.count.fetch_add(1, Relaxed);
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        counts.sum_nanos.fetch_add(nanos, Relaxed);
        counts.buckets[bucket_of(took)].fetch_add(1, Relaxed);
    });
}

/// The two series in the Prometheus text format, summed over threads.
pub fn render(out: &mut String) {
    // (route, method, status) -> requests; route -> (count, sum, buckets).
    let mut requests: Vec<(Key, u64)> = Vec::new();
    let mut durations: Vec<(Box<str>, u64, u64, [u64; SECONDS_BUCKETS.len() + 1])> = Vec::new();
    {
        let all = ALL.lock().unwrap_or_else(|e| e.into_inner());
        for (key, counts) in all.iter() {
            let count = counts.count.load(Relaxed);
            match requests.iter_mut().find(|(k, _)| k == key) {
                Some((_, n)) => *n += count,
                None => requests.push((key.clone(), count)),
            }
            let at = match durations.iter().position(|d| d.0 == key.route) {
                Some(at) => at,
                None => {
                    durations.push((key.route.clone(), 0, 0, [0; SECONDS_BUCKETS.len() + 1]));
                    durations.len() - 1
                }
            };
            let d = &mut durations[at];
            d.1 += count;
            d.2 = d.2.saturating_add(counts.sum_nanos.load(Relaxed));
            for (total, bucket) in d.3.iter_mut().zip(&counts.buckets) {
                *total += bucket.load(Relaxed);
            }
        }
    }
    requests.sort_by(|a, b| a.0.cmp(&b.0));
    durations.sort_by(|a, b| a.0.cmp(&b.0));

    let _ = writeln!(
        out,
        "# HELP {HTTP_REQUESTS} HTTP requests answered, by route pattern, method and status"
    );
    let _ = writeln!(out, "# TYPE {HTTP_REQUESTS} counter");
    for (key, n) in &requests {
        let _ = writeln!(
            out,
            "{HTTP_REQUESTS}{{route=\"{}\",method=\"{}\",status=\"{}\"}} {n}",
            escape(&key.route),
            key.method,
            key.status
        );
    }
    let _ = writeln!(
        out,
        "# HELP {HTTP_DURATION} Time to answer an HTTP request (to the headers of a stream)"
    );
    let _ = writeln!(out, "# TYPE {HTTP_DURATION} histogram");
    for (route, count, sum_nanos, buckets) in &durations {
        let route = escape(route);
        let mut cumulative = 0;
        for (bound, n) in SECONDS_BUCKETS.iter().zip(buckets) {
            cumulative += n;
            let _ = writeln!(
                out,
                "{HTTP_DURATION}_bucket{{route=\"{route}\",le=\"{bound}\"}} {cumulative}"
            );
        }
        let _ = writeln!(
            out,
            "{HTTP_DURATION}_bucket{{route=\"{route}\",le=\"+Inf\"}} {count}"
        );
        let _ = writeln!(
            out,
            "{HTTP_DURATION}_sum{{route=\"{route}\"}} {}",
            *sum_nanos as f64 / 1e9
        );
        let _ = writeln!(out, "{HTTP_DURATION}_count{{route=\"{route}\"}} {count}");
    }
}

/// A label value in the text format: backslash, quote and newline escaped.
fn escape(value: &str) -> String {
    value
        .replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.rsplit(' ').next())
    }

    #[test]
    fn durations_fall_in_the_first_bucket_at_or_above_them() {
        assert_eq!(bucket_of(Duration::ZERO), 0);
        assert_eq!(bucket_of(Duration::from_micros(100)), 0);
        assert_eq!(bucket_of(Duration::from_nanos(100_001)), 1);
        assert_eq!(bucket_of(Duration::from_millis(1)), 3);
        assert_eq!(
            bucket_of(Duration::from_secs(10)),
            SECONDS_BUCKETS.len() - 1
        );
        assert_eq!(bucket_of(Duration::from_secs(11)), SECONDS_BUCKETS.len());
        assert_eq!(bucket_of(Duration::MAX), SECONDS_BUCKETS.len());
    }

    #[test]
    fn unknown_methods_share_one_label() {
        assert_eq!(method_label("GET"), "GET");
        assert_eq!(method_label("DELETE"), "DELETE");
        assert_eq!(method_label("BREW"), "other");
        assert_eq!(method_label("get"), "other");
    }

    #[test]
    fn threads_are_summed_per_series_and_buckets_are_cumulative() {
        // A route of its own: the registry is process-wide.
        let route = "/test/threads_are_summed";
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(move || {
                    for _ in 0..250 {
                        record(route, "GET", 200, Duration::from_micros(300));
                    }
                    record(route, "BREW", 405, Duration::from_secs(20));
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let mut out = String::new();
        render(&mut out);
        let requests = |labels: &str| line(&out, &format!("{HTTP_REQUESTS}{{{labels}}} "));
        assert_eq!(
            requests(&format!("route=\"{route}\",method=\"GET\",status=\"200\"")),
            Some("1000")
        );
        assert_eq!(
            requests(&format!(
                "route=\"{route}\",method=\"other\",status=\"405\""
            )),
            Some("4")
        );
        let bucket = |le: &str| {
            line(
                &out,
                &format!("{HTTP_DURATION}_bucket{{route=\"{route}\",le=\"{le}\"}} "),
            )
        };
        assert_eq!(bucket("0.00025"), Some("0"));
        assert_eq!(bucket("0.0005"), Some("1000"));
        assert_eq!(bucket("10"), Some("1000"));
        assert_eq!(bucket("+Inf"), Some("1004"));
        assert_eq!(
            line(
                &out,
                &format!("{HTTP_DURATION}_count{{route=\"{route}\"}} ")
            ),
            Some("1004")
        );
        let sum: f64 = line(&out, &format!("{HTTP_DURATION}_sum{{route=\"{route}\"}} "))
            .unwrap()
            .parse()
            .unwrap();
        assert!((sum - 80.3).abs() < 1e-9, "{sum}");
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), r#"a\"b\\c\nd"#);
    }
}
