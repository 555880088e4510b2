//! The TCP socket under a connection, for options the routes need: every socket
//! sends small answers at once (no Nagle delay), and a feed subscriber's socket
//! is bounded: a fixed send buffer, so the kernel does not grow it to
//! megabytes for a client that does not read, and a user timeout, so a peer that
//! acknowledges nothing for that long is cut and its socket released.

use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::time::Duration;

use actix_web::HttpRequest;
use actix_web::dev::Extensions;
use actix_web::rt::net::TcpStream;

/// Kernel send buffer of a feed socket (Linux doubles it for bookkeeping).
const FEED_SEND_BUFFER: usize = 128 * 1024;
/// A feed peer that acknowledges nothing for this long is disconnected.
const FEED_USER_TIMEOUT: Duration = Duration::from_secs(30);

/// The connection's socket, valid for as long as its requests are served.
#[derive(Clone, Copy)]
struct ConnectionSocket(RawFd);

/// Options of every connection, and its socket kept for the routes.
pub fn on_connect(tcp: &TcpStream, ext: &mut Extensions) {
    let _ = tcp.set_nodelay(true);
    ext.insert(ConnectionSocket(tcp.as_raw_fd()));
}

/// Bounds the socket of a feed subscriber, and gives it back (a stop cuts it).
/// Best effort: a socket that refuses an option keeps the kernel's defaults.
pub fn bound_feed_socket(req: &HttpRequest) -> Option<RawFd> {
    let ConnectionSocket(raw) = req.conn_data::<ConnectionSocket>().copied()?;
    let fd = raw;
    // SAFETY: the fd belongs to the connection serving `req`, open while it runs.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    let socket = socket2::SockRef::from(&fd);
    if let Err(e) = socket
        .set_send_buffer_size(FEED_SEND_BUFFER)
        .and_then(|_| socket.set_tcp_user_timeout(Some(FEED_USER_TIMEOUT)))
    {
        tracing::debug!(error = %e, "feed socket options not set");
    }
    Some(raw)
}
