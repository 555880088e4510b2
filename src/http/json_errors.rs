//! JSON bodies for the errors actix-http answers by itself: a request
//! it cannot parse (400: a malformed request line, a bad Content-Length, or
//! Content-Length with chunked), a head over its buffer (431), and a head that
//! does not arrive in time (408) are written by its dispatcher with an empty
//! body, before any handler runs, and it has no hook to change them.
//!
//! So the connection's socket is wrapped: when the bytes the dispatcher writes
//! hold one of those exact empty-body heads, it is rewritten with the contract's
//! `{"error": ...}` body (ApiError::body, the one place error bodies are made).
//! No answer of ours can be mistaken for one: every application error carries
//! a JSON body (never `content-length: 0`). The dispatcher hands over whole
//! encoded responses, so a head is always seen whole before any of it is
//! written, and the error is the last thing written on its connection.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::error::ApiError;

/// The heads actix-http writes for its own errors, and what they mean.
const EMPTY_ERRORS: [(&[u8], ApiError); 3] = [
    (b"HTTP/1.1 400 Bad Request\r\n", ApiError::Invalid),
    (
        b"HTTP/1.1 408 Request Timeout\r\n",
        ApiError::RequestTimeout,
    ),
    (
        b"HTTP/1.1 431 Request Header Fields Too Large\r\n",
        ApiError::HeadersTooLarge,
    ),
];
const EMPTY_LENGTH: &[u8] = b"content-length: 0\r\n";
const HEAD_END: &[u8] = b"\r\n\r\n";

/// The error is the last message on its connection (actix stops reading after
/// it), so only the tail of a write can hold it: nothing else is scanned, and
/// the hot path pays one 4-byte comparison per write with a body.
const TAIL: usize = 512;
/// Every head opens with it; the last one in a write is the write's last head.
const STATUS_LINE: &[u8] = b"HTTP/1.1 ";

/// Where the last head of `tail` starts. actix writes header names in lower
/// case, so an `H` is rare in a head: a vectorised search from the end for
/// it finds the status line at once (a 304, an empty body too, pays that).
fn last_head(tail: &[u8]) -> Option<usize> {
    memchr::memrchr_iter(b'H', tail).find(|&at| tail[at..].starts_with(STATUS_LINE))
}

/// `out` with an empty-body error response at its end given its JSON body, or
/// None when there is none (the common case: nothing is copied).
pub fn rewrite(out: &[u8]) -> Option<Vec<u8>> {
    // An empty body: the write ends with its head. JSON and SSE bodies never do.
    if !out.ends_with(HEAD_END) {
        return None;
    }
    let start = out.len().saturating_sub(TAIL);
    let tail = &out[start..];
    // One search for the last head; its status line says the rest.
    let at = last_head(tail)?;
    let (status, error) = EMPTY_ERRORS
        .iter()
        .find(|(status, _)| tail[at..].starts_with(status))?;
    let after_status = at + status.len();
    let after_length = after_status + EMPTY_LENGTH.len();
    // Its head is the whole rest of the write: the status line, content-length 0,
    // more headers, the blank line.
    if !tail[after_status..].starts_with(EMPTY_LENGTH)
        || tail[after_length..tail.len() - HEAD_END.len()]
            .windows(HEAD_END.len())
            .any(|w| w == HEAD_END)
    {
        return None;
    }
    let body = error.body();
    let mut buf = Vec::with_capacity(out.len() + 64 + body.len());
    buf.extend_from_slice(&out[..start + after_status]);
    buf.extend_from_slice(format!("content-length: {}\r\n", body.len()).as_bytes());
    buf.extend_from_slice(b"content-type: application/json\r\n");
    buf.extend_from_slice(&tail[after_length..]);
    buf.extend_from_slice(&body);
    Some(buf)
}

/// A connection's socket whose outgoing error heads are rewritten.
pub struct JsonErrors<T> {
    inner: T,
    /// Rewritten bytes still to be written, from `sent` on.
    pending: Vec<u8>,
    sent: usize,
}

impl<T> JsonErrors<T> {
    pub fn new(inner: T) -> Self {
        JsonErrors {
            inner,
            pending: Vec::new(),
            sent: 0,
        }
    }

    pub fn get_ref(&self) -> &T {
        &self.inner
    }
}

impl<T: AsyncWrite + Unpin> JsonErrors<T> {
    /// Writes out what was rewritten before anything else.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.pending.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.pending.clear();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for JsonErrors<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for JsonErrors<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        ready!(this.poll_pending(cx))?;
        match rewrite(buf) {
            None => Pin::new(&mut this.inner).poll_write(cx, buf),
            Some(rewritten) => {
                // Taken whole; written out by this call or the next write/flush.
                this.pending = rewritten;
                if let Poll::Ready(Err(e)) = this.poll_pending(cx) {
                    return Poll::Ready(Err(e));
                }
                Poll::Ready(Ok(buf.len()))
            }
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATE: &str = "date: Sun, 22 Nov 2026 23:18:28 GMT\r\n";

    #[test]
    fn empty_error_heads_get_their_json_body() {
        let out = format!(
            "HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\n{DATE}\r\n"
        );
        let got = String::from_utf8(rewrite(out.as_bytes()).unwrap()).unwrap();
        assert_eq!(
            got,
            format!(
                "HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 29\r\ncontent-type: application/json\r\nconnection: close\r\n{DATE}\r\n{{\"error\":\"headers too large\"}}"
            )
        );
    }

    #[test]
    fn after_a_pipelined_answer_only_the_error_changes() {
        let ok = format!(
            "HTTP/1.1 200 OK\r\ncontent-length: 12\r\ncontent-type: application/json\r\n{DATE}\r\n{{\"pools\":[]}}"
        );
        let bad = format!("HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n{DATE}\r\n");
        let got = String::from_utf8(rewrite(format!("{ok}{bad}").as_bytes()).unwrap()).unwrap();
        assert_eq!(
            got,
            format!(
                "{ok}HTTP/1.1 400 Bad Request\r\ncontent-length: 19\r\ncontent-type: application/json\r\n{DATE}\r\n{{\"error\":\"invalid\"}}"
            )
        );
    }

    #[test]
    fn our_own_answers_pass_untouched() {
        for out in [
            format!(
                "HTTP/1.1 400 Bad Request\r\ncontent-length: 19\r\ncontent-type: application/json\r\n{DATE}\r\n{{\"error\":\"invalid\"}}"
            ),
            format!("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n{DATE}\r\n"),
            // The polls' 304: an empty body, after a pipelined error-like 200.
            format!(
                "HTTP/1.1 304 Not Modified\r\ncache-control: no-cache\r\netag: \"00\"\r\n{DATE}\r\n"
            ),
            format!(
                "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\nHTTP/1.1 304 Not Modified\r\n{DATE}\r\n"
            ),
            // A body quoting an error head: JSON escapes its CR LF.
            r#"{"error_msg":"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n"}"#.to_string(),
        ] {
            assert_eq!(rewrite(out.as_bytes()), None, "{out}");
        }
    }

    #[tokio::test]
    async fn a_slow_socket_still_gets_every_byte() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // A pipe of 7 bytes forces many partial writes.
        let (client, server) = tokio::io::duplex(7);
        let mut wrapped = JsonErrors::new(server);
        let out = format!("HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\n{DATE}\r\n");
        let writer = tokio::spawn(async move {
            wrapped.write_all(out.as_bytes()).await.unwrap();
            wrapped.shutdown().await.unwrap();
        });
        let mut got = String::new();
        let mut client = client;
        client.read_to_string(&mut got).await.unwrap();
        writer.await.unwrap();
        assert!(
            got.ends_with("\r\n\r\n{\"error\":\"request timeout\"}"),
            "{got}"
        );
        assert!(got.contains("content-length: 27\r\n"), "{got}");
    }
}
