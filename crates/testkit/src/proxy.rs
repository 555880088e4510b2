//! A TCP proxy in front of a test's peer (surfpool's websocket or its HTTP RPC,
//! PostgreSQL, a gRPC node) to cut connections, refuse new ones (accepted
//! and closed: `down`; or nothing listening at all, as a killed process:
//! `close`), freeze them (no close, nothing delivered either way), slow what
//! the server sends to a link's rate (`throttle`), or, on a websocket,
//! duplicate and reorder what the server sends.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Instant;

pub struct TcpProxy {
    /// The proxy's address, in the upstream's scheme (`ws://`, `http://`, or
    /// a bare `host:port`).
    pub url: String,
    /// Where it listens (the same address after `close` and `reopen`).
    addr: SocketAddr,
    /// The upstream's `host:port`.
    target: String,
    state: Arc<Mutex<State>>,
    /// Notifications sent twice and out of order so far.
    pub messed: Arc<AtomicUsize>,
    /// Connections accepted so far, refused ones included (accepted and closed).
    pub accepted: Arc<AtomicUsize>,
}

#[derive(Default)]
struct State {
    refusing: bool,
    /// New connections start frozen (a paused server: accepted, unanswered).
    pausing: bool,
    /// Server-to-client websocket frames of new connections are duplicated
    /// and reordered.
    messing: bool,
    /// One per live connection: send true to freeze it; dropped to cut it.
    connections: Vec<(watch::Sender<bool>, tokio::task::JoinHandle<()>)>,
    /// Bytes a second new connections carry from the server to the client.
    throttle: Option<u64>,
    /// New connections go here instead (`host:port`), once set.
    retargeted: Option<String>,
    /// The accept loop, while listening.
    accepting: Option<tokio::task::JoinHandle<()>>,
}

impl TcpProxy {
    /// Forwards a loopback port to `upstream` (`ws://host:port`,
    /// `http://host:port` or `host:port`).
    pub async fn start(upstream: &str) -> TcpProxy {
        TcpProxy::start_on("127.0.0.1:0", upstream).await
    }

    /// Forwards `listen` (`host:port`; waits until it can be bound) to `upstream`.
    pub async fn start_on(listen: &str, upstream: &str) -> TcpProxy {
        let (scheme, rest) = match upstream.split_once("://") {
            Some((scheme, rest)) => (format!("{scheme}://"), rest),
            None => (String::new(), upstream),
        };
        let listener = bind(listen).await;
        let addr = listener.local_addr().unwrap();
        let proxy = TcpProxy {
            url: format!("{scheme}{addr}"),
            addr,
            target: rest.trim_end_matches('/').to_string(),
            state: Arc::default(),
            messed: Arc::default(),
            accepted: Arc::default(),
        };
        proxy.accept(listener);
        proxy
    }

    fn accept(&self, listener: TcpListener) {
        let (accepting, counting, accepts) = (
            self.state.clone(),
            self.messed.clone(),
            self.accepted.clone(),
        );
        let target = self.target.clone();
        let task = tokio::task::spawn_local(async move {
            while let Ok((client, _)) = listener.accept().await {
                accepts.fetch_add(1, Ordering::SeqCst);
                let (refusing, messing, pausing, throttle, to) = {
                    let s = accepting.lock().unwrap();
                    let to = s.retargeted.clone().unwrap_or_else(|| target.clone());
                    (s.refusing, s.messing, s.pausing, s.throttle, to)
                };
                if refusing {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&to).await else {
                    continue;
                };
                let (freeze, frozen) = watch::channel(pausing);
                let task = tokio::task::spawn_local(pipe(
                    client,
                    server,
                    frozen,
                    messing.then(|| counting.clone()),
                    throttle,
                ));
                accepting.lock().unwrap().connections.push((freeze, task));
            }
        });
        self.state.lock().unwrap().accepting = Some(task);
    }

    /// A stopped process: every connection cut, and nothing listening at the
    /// address, so a new one is refused by the system (not accepted and closed,
    /// as `down` does) until `reopen`.
    pub fn close(&self) {
        if let Some(accepting) = self.state.lock().unwrap().accepting.take() {
            accepting.abort();
        }
        self.cut();
    }

    /// Listens at the same address again, after `close`.
    pub async fn reopen(&self) {
        let listener = bind(&self.addr.to_string()).await;
        self.accept(listener);
    }

    /// Closes every open connection.
    pub fn cut(&self) {
        for (_, task) in self.state.lock().unwrap().connections.drain(..) {
            task.abort();
        }
    }

    /// Cuts every connection and refuses new ones until `up`.
    pub fn down(&self) {
        self.state.lock().unwrap().refusing = true;
        self.cut();
    }

    pub fn up(&self) {
        self.state.lock().unwrap().refusing = false;
    }

    /// New connections go to `upstream` (in the scheme `start` took): a
    /// client moved to another replica.
    pub fn retarget(&self, upstream: &str) {
        let rest = upstream
            .split_once("://")
            .map_or(upstream, |(_, rest)| rest);
        self.state.lock().unwrap().retargeted = Some(rest.trim_end_matches('/').to_string());
    }

    /// Open connections stay open but carry nothing more, either way.
    pub fn freeze(&self) {
        for (freeze, _) in &self.state.lock().unwrap().connections {
            let _ = freeze.send(true);
        }
    }

    /// A paused server: open connections frozen, new ones accepted and
    /// frozen too, until `resume` lets everything held go on.
    pub fn pause(&self) {
        self.state.lock().unwrap().pausing = true;
        self.freeze();
    }

    pub fn resume(&self) {
        let mut state = self.state.lock().unwrap();
        state.pausing = false;
        for (freeze, _) in &state.connections {
            let _ = freeze.send(false);
        }
    }

    /// From the next connection on, what the server sends reaches the client
    /// at `bytes_per_second` at most (a slower link than loopback: what the
    /// client has not taken waits in the server's socket, then its queue).
    pub fn throttle(&self, bytes_per_second: u64) {
        self.state.lock().unwrap().throttle = Some(bytes_per_second.max(1));
    }

    /// From the next connection on, every notification the server sends
    /// arrives twice, and each one after the one that follows it.
    pub fn mess(&self) {
        self.state.lock().unwrap().messing = true;
    }
}

async fn pipe(
    client: TcpStream,
    server: TcpStream,
    frozen: watch::Receiver<bool>,
    messing: Option<Arc<AtomicUsize>>,
    throttle: Option<u64>,
) {
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let up = copy(client_read, server_write, frozen.clone(), None);
    if let Some(count) = messing {
        tokio::join!(up, mess(server_read, client_write, count));
    } else {
        tokio::join!(up, copy(server_read, client_write, frozen, throttle));
    }
}

async fn copy(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    mut frozen: watch::Receiver<bool>,
    throttle: Option<u64>,
) {
    // Throttled, it takes at most 10 ms of the rate at a time, and each
    // piece leaves once the link has carried the one before (an idle link
    // banks no credit).
    let size = throttle.map_or(16 * 1024, |rate| {
        (rate / 100).clamp(512, 16 * 1024) as usize
    });
    let mut buf = vec![0u8; size];
    let mut free_at = Instant::now();
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        // Frozen: the socket stays open and delivers nothing until thawed
        // (if ever); what was read meanwhile goes on then.
        while *frozen.borrow() {
            if frozen.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
        if let Some(rate) = throttle {
            free_at = free_at.max(Instant::now()) + Duration::from_secs_f64(n as f64 / rate as f64);
            tokio::time::sleep_until(free_at).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// The server's side of a websocket, frame by frame once the upgrade answer
/// has passed: a notification is held back until the next one comes (or
/// 200 ms pass), then both are sent, the later first, each twice.
async fn mess(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, count: Arc<AtomicUsize>) {
    let mut pending: Vec<u8> = Vec::new();
    let mut upgraded = false;
    let mut held: Option<Vec<u8>> = None;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let read = tokio::time::timeout(Duration::from_millis(200), from.read(&mut buf)).await;
        let n = match read {
            Err(_) => {
                // Quiet for a while: what is held goes out (twice).
                if let Some(frame) = held.take()
                    && (to.write_all(&frame).await.is_err() || to.write_all(&frame).await.is_err())
                {
                    return;
                }
                continue;
            }
            Ok(Ok(0) | Err(_)) => return,
            Ok(Ok(n)) => n,
        };
        pending.extend_from_slice(&buf[..n]);
        if !upgraded {
            let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") else {
                continue;
            };
            let head: Vec<u8> = pending.drain(..end + 4).collect();
            if to.write_all(&head).await.is_err() {
                return;
            }
            upgraded = true;
        }
        while let Some(len) = frame_len(&pending) {
            let frame: Vec<u8> = pending.drain(..len).collect();
            let notification = frame[0] & 0x0f == 1
                && frame
                    .windows(b"Notification".len())
                    .any(|w| w == b"Notification");
            let out = if !notification {
                vec![frame]
            } else {
                match held.take() {
                    None => {
                        held = Some(frame);
                        Vec::new()
                    }
                    Some(earlier) => {
                        count.fetch_add(2, Ordering::Relaxed);
                        vec![frame.clone(), earlier.clone(), frame, earlier]
                    }
                }
            };
            for frame in out {
                if to.write_all(&frame).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// The length of the whole frame at the start of `bytes` (an unmasked server
/// frame), if it has all arrived.
fn frame_len(bytes: &[u8]) -> Option<usize> {
    let first = *bytes.get(1)? as usize;
    let (header, payload) = match first & 0x7f {
        126 => (
            4,
            u16::from_be_bytes([*bytes.get(2)?, *bytes.get(3)?]) as usize,
        ),
        127 => (
            10,
            u64::from_be_bytes(bytes.get(2..10)?.try_into().ok()?) as usize,
        ),
        n => (2, n),
    };
    let mask = if first & 0x80 != 0 { 4 } else { 0 };
    let total = header + mask + payload;
    (bytes.len() >= total).then_some(total)
}

/// Binds `addr`, waiting while it is still taken (a port just let go).
async fn bind(addr: &str) -> TcpListener {
    let mut tries = 0;
    loop {
        match TcpListener::bind(addr).await {
            Ok(listener) => return listener,
            Err(_) if tries < 250 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("cannot listen on {addr}: {e}"),
        }
    }
}
