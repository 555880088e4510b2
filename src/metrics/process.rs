//! The standard process series (the names every Prometheus client library
//! exports: `process_cpu_seconds_total`, `process_resident_memory_bytes`,
//! `process_virtual_memory_bytes`, `process_open_fds`, `process_max_fds`,
//! `process_start_time_seconds`), read from /proc at each scrape, and
//! `lendex_build_info`. Rendered as text by hand: the facade has no float
//! counter for CPU seconds, and nothing here needs a recorder.

use std::fmt::Write as _;

/// One scrape's reading of the process.
#[derive(Debug, Default, PartialEq)]
pub struct Reading {
    pub cpu_seconds: f64,
    pub resident_bytes: u64,
    pub virtual_bytes: u64,
    pub open_fds: u64,
    pub max_fds: Option<u64>,
    pub start_time_seconds: f64,
}

/// Appends the process series and the build info to a scrape.
pub fn render(out: &mut String) {
    let _ = writeln!(
        out,
        "# HELP lendex_build_info The running build: its version and profile\n# TYPE lendex_build_info gauge\nlendex_build_info{{version=\"{}\",profile=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION"),
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
    );
    if let Some(reading) = read() {
        write_reading(out, &reading);
    }
}

fn write_reading(out: &mut String, r: &Reading) {
    let mut series = |name: &str, kind: &str, help: &str, value: String| {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
        );
    };
    series(
        "process_cpu_seconds_total",
        "counter",
        "Total user and system CPU time spent in seconds",
        format!("{}", r.cpu_seconds),
    );
    series(
        "process_resident_memory_bytes",
        "gauge",
        "Resident memory size in bytes",
        r.resident_bytes.to_string(),
    );
    series(
        "process_virtual_memory_bytes",
        "gauge",
        "Virtual memory size in bytes",
        r.virtual_bytes.to_string(),
    );
    series(
        "process_open_fds",
        "gauge",
        "Number of open file descriptors",
        r.open_fds.to_string(),
    );
    if let Some(max) = r.max_fds {
        series(
            "process_max_fds",
            "gauge",
            "Maximum number of open file descriptors",
            max.to_string(),
        );
    }
    series(
        "process_start_time_seconds",
        "gauge",
        "Start time of the process since unix epoch in seconds",
        format!("{}", r.start_time_seconds),
    );
}

/// This process, from /proc (None elsewhere than Linux, or if unreadable).
fn read() -> Option<Reading> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let proc_stat = std::fs::read_to_string("/proc/stat").ok()?;
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let open_fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64);
    // SAFETY: sysconf only reads system constants.
    let (ticks, page) = unsafe {
        (
            libc::sysconf(libc::_SC_CLK_TCK),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    parse(
        &stat,
        &proc_stat,
        &limits,
        open_fds,
        ticks.max(1) as f64,
        page.max(1) as u64,
    )
}

/// The reading from the texts of /proc/self/stat, /proc/stat and
/// /proc/self/limits (pure, for tests).
pub fn parse(
    stat: &str,
    proc_stat: &str,
    limits: &str,
    open_fds: u64,
    ticks_per_second: f64,
    page_size: u64,
) -> Option<Reading> {
    // The command name (field 2) may hold spaces and parentheses: fields
    // are counted after its closing one.
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields 14, 15 (utime, stime), 22 (starttime), 23 (vsize), 24 (rss),
    // numbered from 1 with field 3 at index 0 here.
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    let boot_time: u64 = proc_stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    let max_fds = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|soft| soft.parse().ok());
    Some(Reading {
        cpu_seconds: (field(14)? + field(15)?) as f64 / ticks_per_second,
        resident_bytes: field(24)? * page_size,
        virtual_bytes: field(23)?,
        open_fds,
        max_fds,
        start_time_seconds: boot_time as f64 + field(22)? as f64 / ticks_per_second,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "4242 (lendex (x) y) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 130 0 0 20 0 9 0 \
        360000 123456789 5000 18446744073709551615 1 1 0 0 0 0 0 4096 17926 0 0 0 17 1 0 0 0 0 0";

    #[test]
    fn proc_texts_become_the_standard_series() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            20000                20000                files\n";
        let reading = parse(
            STAT,
            "cpu 1 2 3\nbtime 1700000000\n",
            limits,
            17,
            100.0,
            4096,
        )
        .unwrap();
        assert_eq!(
            reading,
            Reading {
                cpu_seconds: 3.8,
                resident_bytes: 5000 * 4096,
                virtual_bytes: 123_456_789,
                open_fds: 17,
                max_fds: Some(20_000),
                start_time_seconds: 1_700_003_600.0,
            }
        );
        let mut out = String::new();
        write_reading(&mut out, &reading);
        assert!(
            out.contains(
                "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 3.8\n"
            )
        );
        assert!(out.contains("process_max_fds 20000\n"));
    }

    #[test]
    fn unreadable_texts_give_nothing() {
        assert_eq!(parse("garbage", "btime 1", "", 0, 100.0, 4096), None);
        assert_eq!(parse(STAT, "no boot time", "", 0, 100.0, 4096), None);
    }

    #[test]
    fn this_process_is_read() {
        let mut out = String::new();
        render(&mut out);
        assert!(out.contains("lendex_build_info{version=\""));
        if cfg!(target_os = "linux") {
            assert!(out.contains("\nprocess_open_fds "), "{out}");
        }
    }
}
