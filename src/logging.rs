//! Where log lines go: `tracing` to stderr, one line per event (JSON lines when
//! `LENDEX_LOG_FORMAT=json`), coloured only on a terminal.
//!
//! A log line must never hold up a request or a shutdown, nor take the process
//! down: a reader that stops reading (a `tee` killed by Ctrl-C, a log shipper
//! restarting) leaves stderr a broken pipe, and a write to it fails. So lines
//! are handed to a thread of their own through a bounded queue: a line that
//! finds the queue full, or that the thread cannot write, is dropped and
//! counted (`lendex_log_lines_dropped_total`), never retried and never a
//! panic. The queue holds at most `QUEUE_LINES` lines.

use std::io::{IsTerminal, Write};
use std::sync::OnceLock;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::{Duration, Instant};

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// Lines waiting for the writer thread, at most (about 4 MB of ordinary lines).
const QUEUE_LINES: usize = 16_384;

/// Installs the global subscriber: INFO unless `RUST_LOG` says otherwise.
/// PostgreSQL's NOTICEs (`relation ... already exists, skipping`: tokio_postgres
/// logs them at INFO) show only when the level is DEBUG or finer.
pub fn init() {
    let mut filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let verbose = filter
        .max_level_hint()
        .is_some_and(|level| level >= tracing::level_filters::LevelFilter::DEBUG);
    if !verbose && let Ok(quiet) = "tokio_postgres::connection=warn".parse() {
        filter = filter.add_directive(quiet);
    }
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        // A failed write is the sink's to count; the subscriber's own report
        // of it would go to the same broken stderr (and panic there).
        .log_internal_errors(false)
        .with_writer(sink().clone());
    if std::env::var("LENDEX_LOG_FORMAT").is_ok_and(|v| v == "json") {
        builder.json().init();
    } else {
        builder.init();
    }
}

/// Waits until the queued lines are written, for at most `limit` (at the end of
/// a graceful stop: the last lines are usually the interesting ones).
pub fn flush(limit: Duration) {
    let Some(sink) = SINK.get() else {
        return;
    };
    let until = Instant::now() + limit;
    while sink.queued() > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
}

static SINK: OnceLock<Sink> = OnceLock::new();

fn sink() -> &'static Sink {
    SINK.get_or_init(|| Sink::spawn(std::io::stderr(), QUEUE_LINES))
}

/// The queue to the writer thread.
#[derive(Clone)]
pub struct Sink {
    tx: SyncSender<Vec<u8>>,
    pending: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Sink {
    /// A writer thread writing to `out`, behind a queue of `lines`.
    pub fn spawn(out: impl Write + Send + 'static, lines: usize) -> Sink {
        let (tx, rx) = sync_channel(lines);
        let pending = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = pending.clone();
        let spawned = std::thread::Builder::new()
            .name("log-writer".into())
            .spawn(move || write_lines(rx, out, &counted));
        if spawned.is_err() {
            // No thread, no logs: every line is dropped (and counted).
            crate::metrics::log_lines_dropped(1);
        }
        Sink { tx, pending }
    }

    fn queued(&self) -> usize {
        self.pending.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Queues one line, or drops it (counted) when the queue is full or gone.
    fn send(&self, line: Vec<u8>) {
        self.pending
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        match self.tx.try_send(line) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.pending
                    .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
                crate::metrics::log_lines_dropped(1);
            }
        }
    }
}

fn write_lines(
    rx: Receiver<Vec<u8>>,
    mut out: impl Write,
    pending: &std::sync::atomic::AtomicUsize,
) {
    for line in rx {
        if out.write_all(&line).and_then(|()| out.flush()).is_err() {
            crate::metrics::log_lines_dropped(1);
        }
        pending.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// One event's line, built in memory and queued whole when the formatter is
/// done with it (never written piecemeal, so lines never interleave).
pub struct Line {
    buf: Vec<u8>,
    sink: Sink,
}

impl Write for Line {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        if !self.buf.is_empty() {
            self.sink.send(std::mem::take(&mut self.buf));
        }
    }
}

impl<'a> MakeWriter<'a> for Sink {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line {
            buf: Vec::with_capacity(256),
            sink: self.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An output that fails every write, as a pipe whose reader is gone.
    struct Broken;

    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
    }

    /// An output that never returns: a reader that stopped reading a full pipe.
    struct Stuck;

    impl Write for Stuck {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            std::thread::sleep(Duration::from_secs(3600));
            Ok(0)
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_broken_pipe_drops_lines_without_a_panic() {
        let sink = Sink::spawn(Broken, 4);
        for _ in 0..100 {
            let mut line = sink.make_writer();
            line.write_all(b"a line\n").unwrap();
        }
        let until = Instant::now() + Duration::from_secs(5);
        while sink.queued() > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(sink.queued(), 0, "every line was taken and dropped");
    }

    #[test]
    fn a_stuck_reader_never_blocks_the_logger_and_memory_stays_bounded() {
        let sink = Sink::spawn(Stuck, 8);
        let started = Instant::now();
        for _ in 0..10_000 {
            let mut line = sink.make_writer();
            line.write_all(&[b'x'; 100]).unwrap();
        }
        // A hang detector, not a speed test: 10,000 lines take microseconds.
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "logging waited on its reader"
        );
        // One line in the writer's hands, at most 8 queued.
        assert!(sink.queued() <= 9, "{} lines held", sink.queued());
    }
}
