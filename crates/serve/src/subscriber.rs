//! One SSE subscriber of the liquidation feed, from both ends: the cache's side
//! (`Subscriber`: offer a batch of frames, or drop it) and the connection's side
//! (`FeedStream`: the bytes actix writes to the socket).
//!
//! What one slow subscriber can hold is bounded: frames are shared
//! `Bytes` (one copy per batch, whoever reads it), the unread backlog is counted
//! in bytes and capped, and the stream hands actix at most `SLICE` bytes at a
//! time, so actix's write buffer never holds a private copy of a 5 MB snapshot.
//! A subscriber past its cap is dropped: its backlog is discarded and, if it ever
//! reads on, it gets one `resync` event telling it to reconnect (with its
//! `Last-Event-ID` it resumes if the replay window still holds what it missed,
//! else it gets a `reset` and the snapshot), and then the stream ends.
//!
//! A stream starts with the hello line and its prelude: the snapshot, the
//! replayed events of a resume, or a `reset` and the snapshot.

use std::collections::VecDeque;
use std::os::fd::{BorrowedFd, RawFd};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use tokio::sync::mpsc;
use tokio::time::{Instant, Interval, interval_at};

use super::gate::Ticket;

/// Largest piece handed to actix at once (it copies each into its write buffer
/// and asks for more only once that has drained).
const SLICE: usize = 64 * 1024;

/// A comment frame every second. It keeps proxies from closing an idle feed, and
/// it is how a hung-up subscriber is noticed: the server learns of a closed
/// connection only when it writes.
const KEEP_ALIVE: Duration = Duration::from_secs(1);

/// The first bytes of every stream; `retry` asks EventSource clients to
/// reconnect after a second (with their Last-Event-ID).
const HELLO: &[u8] = b": lendex liquidation feed\nretry: 1000\n\n";
const COMMENT: &[u8] = b":\n\n";
/// The last event a dropped subscriber sees.
pub const RESYNC: &[u8] = b"event: resync\ndata: {\"reason\":\"subscriber too slow: unread events exceeded cache.subscriber_max_lag_bytes; reconnect with Last-Event-ID\",\"resync\":\"/api/positions/unhealthy\"}\n\n";

/// What both ends share.
struct Shared {
    /// Bytes queued and not yet taken by the stream.
    unread: AtomicUsize,
    /// Set when the cache gives up on this subscriber.
    dropped: AtomicBool,
    /// Set when the service stops: the stream ends, whatever is unread.
    closed: AtomicBool,
}

/// The cache's handle on one subscriber.
pub struct Subscriber {
    tx: mpsc::UnboundedSender<Bytes>,
    shared: Arc<Shared>,
    /// Unread bytes allowed beyond a batch taken on an empty queue.
    max_lag: usize,
    /// The socket of the subscriber's connection, to cut it at a stop.
    socket: Option<RawFd>,
}

impl Subscriber {
    /// A subscriber that starts with `prelude` unread (it counts toward the cap:
    /// the cap is the prelude plus `max_lag`), on the connection of `socket`.
    pub fn new(
        prelude: Vec<Bytes>,
        max_lag: usize,
        socket: Option<RawFd>,
    ) -> (Subscriber, FeedStream) {
        let (tx, rx) = mpsc::unbounded_channel();
        let size: usize = prelude.iter().map(Bytes::len).sum();
        let shared = Arc::new(Shared {
            unread: AtomicUsize::new(size),
            dropped: AtomicBool::new(false),
            closed: AtomicBool::new(false),
        });
        let max_lag = max_lag.saturating_add(size);
        let stream = FeedStream::new(prelude.into(), rx, shared.clone());
        (
            Subscriber {
                tx,
                shared,
                max_lag,
                socket,
            },
            stream,
        )
    }

    /// The service is stopping: the stream ends at once, unread bytes and all,
    /// and the connection's socket is shut down, so a peer that reads nothing
    /// cannot keep the stop waiting for its buffers to drain.
    pub fn close(self) {
        self.shared.closed.store(true, Ordering::Release);
        if let Some(fd) = self.socket
            && !self.tx.is_closed()
        {
            // SAFETY: the stream is alive, so its connection is too: the
            // dispatcher owns the socket and the stream, and drops them together.
            let fd = unsafe { BorrowedFd::borrow_raw(fd) };
            let _ = socket2::SockRef::from(&fd).shutdown(std::net::Shutdown::Both);
        }
    }

    /// Queues a batch; false when the subscriber is gone or now dropped. A batch
    /// is always taken when nothing is unread (however large a price move's batch
    /// is, a reader that keeps up is never dropped); otherwise the unread total
    /// may not pass the cap.
    /// A batch comes in parts (rendered in parallel, never copied into one):
    /// taken or refused as a whole.
    pub fn offer(&self, batch: &[Bytes]) -> bool {
        if self.tx.is_closed() {
            return false;
        }
        let size: usize = batch.iter().map(Bytes::len).sum();
        let unread = self.shared.unread.load(Ordering::Acquire);
        if unread > 0 && unread.saturating_add(size) > self.max_lag {
            self.shared.dropped.store(true, Ordering::Release);
            return false;
        }
        self.shared.unread.fetch_add(size, Ordering::AcqRel);
        batch
            .iter()
            .filter(|part| !part.is_empty())
            .all(|part| self.tx.send(part.clone()).is_ok())
    }

    /// The connection is gone.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// The body of one feed response: the hello line, the prelude, live batches
/// and keep-alive comments, in slices of at most `SLICE` bytes.
pub struct FeedStream {
    /// What is being handed out now.
    current: Bytes,
    /// Sent after the hello line: the snapshot, or the events of a resume.
    prelude: VecDeque<Bytes>,
    /// None once the last frame is out.
    rx: Option<mpsc::UnboundedReceiver<Bytes>>,
    shared: Arc<Shared>,
    ticks: Interval,
    /// The stream's place under the caps (`gate`), held until it ends.
    _ticket: Option<Ticket>,
}

impl FeedStream {
    fn new(
        prelude: VecDeque<Bytes>,
        rx: mpsc::UnboundedReceiver<Bytes>,
        shared: Arc<Shared>,
    ) -> Self {
        FeedStream {
            current: Bytes::from_static(HELLO),
            prelude,
            rx: Some(rx),
            shared,
            ticks: interval_at(Instant::now() + KEEP_ALIVE, KEEP_ALIVE),
            _ticket: None,
        }
    }

    /// The stream holds its place under the caps until it ends.
    pub fn holding(mut self, ticket: Ticket) -> Self {
        self._ticket = Some(ticket);
        self
    }

    /// Takes a queued piece: it no longer counts as unread.
    fn take(&mut self, piece: Bytes) {
        self.shared.unread.fetch_sub(piece.len(), Ordering::AcqRel);
        self.current = piece;
    }
}

impl Stream for FeedStream {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.shared.closed.load(Ordering::Acquire) {
            return Poll::Ready(None);
        }
        loop {
            if !this.current.is_empty() {
                let n = this.current.len().min(SLICE);
                return Poll::Ready(Some(Ok(this.current.split_to(n))));
            }
            let Some(rx) = this.rx.as_mut() else {
                return Poll::Ready(None);
            };
            if this.shared.dropped.load(Ordering::Acquire) {
                // The backlog goes unread: one resync event, then the end.
                this.rx = None;
                this.prelude.clear();
                this.current = Bytes::from_static(RESYNC);
                continue;
            }
            if let Some(piece) = this.prelude.pop_front() {
                this.take(piece);
                continue;
            }
            match rx.poll_recv(cx) {
                Poll::Ready(Some(batch)) => {
                    this.take(batch);
                    continue;
                }
                Poll::Ready(None) if this.shared.dropped.load(Ordering::Acquire) => continue,
                // The service is stopping (CloseStreams): the stream ends.
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => {}
            }
            return match this.ticks.poll_tick(cx) {
                Poll::Ready(_) => Poll::Ready(Some(Ok(Bytes::from_static(COMMENT)))),
                Poll::Pending => Poll::Pending,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    async fn next(stream: &mut FeedStream) -> Bytes {
        stream.next().await.unwrap().unwrap()
    }

    #[tokio::test]
    async fn hello_then_snapshot_in_slices_then_live() {
        let snapshot = Bytes::from(vec![b'x'; SLICE * 2 + 10]);
        let (sub, mut stream) = Subscriber::new(vec![snapshot], 1024, None);
        assert_eq!(next(&mut stream).await, HELLO);
        let sizes = [
            next(&mut stream).await.len(),
            next(&mut stream).await.len(),
            next(&mut stream).await.len(),
        ];
        assert_eq!(sizes, [SLICE, SLICE, 10]);
        assert!(sub.offer(&[Bytes::from_static(b"event: a\n\n")]));
        assert_eq!(next(&mut stream).await, "event: a\n\n");
    }

    #[tokio::test]
    async fn a_reader_that_keeps_up_takes_any_batch() {
        let (sub, mut stream) = Subscriber::new(Vec::new(), 10, None);
        next(&mut stream).await; // hello
        for _ in 0..3 {
            let big = Bytes::from(vec![b'y'; 1000]);
            assert!(
                sub.offer(std::slice::from_ref(&big)),
                "nothing unread: taken whatever its size"
            );
            let mut got = 0;
            while got < 1000 {
                got += next(&mut stream).await.len();
            }
        }
    }

    #[tokio::test]
    async fn a_batch_in_parts_is_taken_or_refused_whole() {
        let (sub, _stream) = Subscriber::new(vec![Bytes::from_static(b"snap")], 100, None);
        assert!(sub.offer(&[Bytes::from(vec![b'a'; 60])]));
        // 30 alone would fit (4 + 60 + 30 <= 104); with its other part it does not.
        let parts = [Bytes::from(vec![b'b'; 30]), Bytes::from(vec![b'c'; 11])];
        assert!(!sub.offer(&parts), "refused as a whole");
        assert_eq!(
            sub.shared.unread.load(Ordering::Acquire),
            64,
            "nothing of it counted"
        );
    }

    #[tokio::test]
    async fn a_lagging_reader_is_dropped_and_told_to_resync() {
        let (sub, mut stream) = Subscriber::new(vec![Bytes::from_static(b"snap")], 100, None);
        assert!(sub.offer(&[Bytes::from(vec![b'a'; 60])]));
        assert!(
            sub.offer(&[Bytes::from(vec![b'b'; 40])]),
            "4 + 60 + 40 <= 104"
        );
        assert!(!sub.offer(&[Bytes::from_static(b"c")]), "past the cap");
        drop(sub);
        // The reader comes back: the hello line was already due; the snapshot and
        // the backlog it never read are skipped.
        assert_eq!(next(&mut stream).await, HELLO);
        let rest: Vec<Bytes> = stream.map(|b| b.unwrap()).collect().await;
        assert!(rest.ends_with(&[Bytes::from_static(RESYNC)]), "{rest:?}");
        assert!(
            !rest
                .iter()
                .any(|b| b.starts_with(b"a") || b.starts_with(b"b"))
        );
    }

    #[tokio::test]
    async fn a_closed_subscriber_ends_its_stream_with_bytes_unread() {
        let (sub, mut stream) = Subscriber::new(vec![Bytes::from(vec![b'x'; SLICE * 4])], 10, None);
        assert_eq!(next(&mut stream).await, HELLO);
        sub.close();
        assert!(stream.next().await.is_none(), "nothing more after a close");
    }

    #[tokio::test]
    async fn a_closed_connection_is_seen_by_the_cache() {
        let (sub, stream) = Subscriber::new(Vec::new(), 10, None);
        assert!(!sub.is_closed());
        drop(stream);
        assert!(sub.is_closed());
        assert!(!sub.offer(&[Bytes::from_static(b"x")]));
    }
}
