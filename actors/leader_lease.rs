//! One ingester per cluster: of all replicas on one database, the one holding a
//! PostgreSQL session-level advisory lock, keyed by the cluster, does the
//! background chain work and records history; the others stay followers and
//! learn changes through NOTIFY like any reader. On-demand syncs run on every
//! replica. The lease is held whenever either kind of work is on.
//!
//! The lock lives on a connection of its own (application_name
//! `lendex-lease`). A leader steps down the moment that session ends (the
//! lock is gone with it: an operator's pg_terminate_backend, a restarted
//! server), and checks it every second besides. PostgreSQL releases the lock
//! when the session ends: at once when the leader's process dies (its socket
//! closes), and within about 4 s when the network is cut, through the
//! session's TCP keepalives set below. Followers retry every second, so another
//! replica leads within 5 s.

use std::time::Duration;

use actix::prelude::*;
use tokio_postgres::{Client, NoTls};

use lendex_store::queries;

/// How often a follower tries the lock, and a leader checks its session.
const EVERY: Duration = Duration::from_secs(1);
/// A check of the leader's session that takes longer than this fails it.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);
/// Server-side keepalives of the lease session: a vanished leader's session
/// (and its lock) ends after idle + interval x count = 4 s.
const KEEPALIVES: &str =
    "-c tcp_keepalives_idle=2 -c tcp_keepalives_interval=1 -c tcp_keepalives_count=2";

/// The lease was taken (true) or lost (false); the first answer is told
/// either way (false: another replica holds it).
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct LeaderChanged(pub bool);

/// The lock's name for `cluster`.
pub fn lease_name(cluster: &str) -> String {
    format!("lendex-ingester/{cluster}")
}

/// Holds or waits for the lease forever, telling each of `to` of every change.
pub async fn hold_lease(
    database_url: String,
    cluster: &'static str,
    to: Vec<Recipient<LeaderChanged>>,
) {
    let tell = |change: LeaderChanged| {
        for recipient in &to {
            recipient.do_send(change);
        }
    };
    let name = lease_name(cluster);
    let mut leader = false;
    // The first answer is told whatever it is: a follower's history waits
    // for it before applying changes (`health_cache::history`).
    let mut told = false;
    loop {
        match connect(&database_url).await {
            Ok((client, mut ended)) => {
                // Leads until the session fails; follows while the lock is taken.
                loop {
                    let step = tokio::time::timeout(
                        CHECK_TIMEOUT,
                        client.query_one(queries::LEASE_TRY_LOCK, &[&name]),
                    )
                    .await;
                    // Re-taking a lock this session holds succeeds (and nests): it
                    // doubles as the leader's check of its session.
                    let holds = match step {
                        Ok(Ok(row)) => row.get::<_, bool>(0),
                        _ => break,
                    };
                    if holds && leader {
                        // Already held: drop the extra level this check took.
                        let _ = tokio::time::timeout(
                            CHECK_TIMEOUT,
                            client.execute(queries::LEASE_UNLOCK, &[&name]),
                        )
                        .await;
                    }
                    if holds != leader {
                        leader = holds;
                        let change = if holds { "taken" } else { "lost" };
                        tracing::info!(cluster, leader, "ingester lease {change}");
                        tell(LeaderChanged(leader));
                    } else if !told {
                        tell(LeaderChanged(leader));
                    }
                    told = true;
                    // The session's end is noticed at once, not at the next check.
                    tokio::select! {
                        () = tokio::time::sleep(EVERY) => {}
                        _ = &mut ended => break,
                    }
                }
            }
            Err(e) => tracing::debug!(error = %e, "lease connection failed"),
        }
        if leader {
            leader = false;
            tracing::warn!(cluster, "ingester lease lost with its database session");
            tell(LeaderChanged(false));
        }
        tokio::time::sleep(EVERY).await;
    }
}

/// The lease's session, and what resolves when it ends.
async fn connect(
    url: &str,
) -> Result<(Client, tokio::sync::oneshot::Receiver<()>), tokio_postgres::Error> {
    let mut config: tokio_postgres::Config = url.parse()?;
    config.options(KEEPALIVES);
    config.application_name("lendex-lease");
    config.connect_timeout(CHECK_TIMEOUT);
    config.keepalives_idle(Duration::from_secs(2));
    let (client, connection) = config.connect(NoTls).await?;
    let (end, ended) = tokio::sync::oneshot::channel();
    actix_rt::spawn(async move {
        let _ = connection.await;
        let _ = end.send(());
    });
    Ok((client, ended))
}
