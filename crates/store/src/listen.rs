//! A LISTEN connection for the health cache. Every change to positions or
//! pools, whoever makes it (this replica, another one, an external indexer
//! writing SQL), announces its tick of the change log (sql/functions.sql); every
//! borrow written announces its wallet (sql/functions.sql). A lost connection may
//! have missed some announcements: after reconnecting, the listener says so
//! (`Notice::Resync`), and the cache reads the log and forgets its borrows.

use std::collections::HashSet;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::mpsc;

use lendex_domain::pubkey::Pubkey;

/// What the listener tells its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// The connection is up (true) or lost (false).
    Listening(bool),
    /// Reconnected: what was announced while nobody listened is unknown.
    Resync,
    /// Ticks up to this one were committed.
    Ticked {
        tick: u64,
        /// When the first of these notifications was received.
        heard: std::time::Instant,
    },
    /// Borrows of these wallets were written.
    BorrowsChanged(Vec<Pubkey>),
}

/// A borrow trigger's payload.
#[derive(serde::Deserialize)]
struct Payload {
    cluster: String,
    /// The replica whose writer made the change (null: any other writer).
    origin: Option<String>,
    owner: Option<String>,
}

/// Holds a LISTEN connection, reconnecting after a second when it is lost, for
/// as long as `tell` accepts notices (it returns false once its owner is gone).
/// Borrows whose origin is `origin` (this replica's own writes, forgotten as
/// they commit) are passed over.
pub async fn listen_forever(
    url: String,
    cluster: &'static str,
    origin: String,
    tell: impl Fn(Notice) -> bool,
) {
    let mut first = true;
    loop {
        match listen_once(&url, cluster, &origin, &tell, first).await {
            Ok(()) => tracing::warn!("LISTEN connection closed; reconnecting"),
            Err(e) => tracing::warn!(error = %e, "LISTEN connection failed; reconnecting"),
        }
        first = false;
        if !tell(Notice::Listening(false)) {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

async fn listen_once(
    url: &str,
    cluster: &str,
    origin: &str,
    tell: &impl Fn(Notice) -> bool,
    first: bool,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let pump = tokio::task::spawn_local(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(message)) = messages.next().await {
            if let tokio_postgres::AsyncMessage::Notification(n) = message
                && tx
                    .send((n.channel().to_string(), n.payload().to_string()))
                    .is_err()
            {
                break;
            }
        }
    });
    client
        .batch_execute("LISTEN lendex_feed; LISTEN lendex_borrows")
        .await?;
    tell(Notice::Listening(true));
    if !first {
        // What was announced while nobody listened is unknown.
        tell(Notice::Resync);
    }
    while let Some(first_notice) = rx.recv().await {
        let heard = std::time::Instant::now();
        // Gather whatever arrived with it, so a burst is one message.
        let mut tick = None;
        let mut borrowers = HashSet::new();
        let mut take = |(channel, payload): (String, String)| {
            if channel == "lendex_feed" {
                tick = tick.max(payload.parse::<u64>().ok());
                return;
            }
            let Ok(n) = serde_json::from_str::<Payload>(&payload) else {
                return;
            };
            if n.cluster != cluster || n.origin.as_deref() == Some(origin) {
                return;
            }
            borrowers.extend(n.owner.and_then(|s| s.parse::<Pubkey>().ok()));
        };
        take(first_notice);
        tokio::time::sleep(Duration::from_millis(2)).await;
        while let Ok(next) = rx.try_recv() {
            take(next);
        }
        if !borrowers.is_empty() {
            tell(Notice::BorrowsChanged(borrowers.into_iter().collect()));
        }
        if let Some(tick) = tick {
            tell(Notice::Ticked { tick, heard });
        }
    }
    pump.abort();
    drop(client);
    Ok(())
}
