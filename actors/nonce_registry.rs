//! The nonce registry: issues handshake nonces and consumes them exactly once.
//!
//! The rows live in PostgreSQL, not in this actor's memory, because several
//! stateless replicas share one database: a nonce issued by one replica must be
//! usable, once, on any other. Single use comes from one atomic
//! `DELETE ... RETURNING` bound to wallet, nonce, action and expiry; of any number
//! of concurrent uses, exactly one gets the row. The actor also purges expired rows.
//!
//! Issuing and spending go through the database writer's auth lane (see
//! `lendex_store::nonces`): its own queue and connection, so spending a nonce runs first,
//! never behind the writes it gates, and concurrent handshakes share one
//! INSERT or DELETE and one commit per batch. A reply comes after COMMIT: an
//! issued nonce is durable, and a nonce reported spent is spent for every replica.

use std::time::Duration;

use actix::prelude::*;
use chrono::{DateTime, Utc};
use deadpool_postgres::Pool;
use rand::RngCore;

use crate::db_writer::{Writers, write};
use crate::error::ActorResult;
use lendex_store::nonces;
use lendex_store::queries;

pub struct NonceRegistry {
    /// For the purge.
    pool: Pool,
    writers: Writers,
    ttl: Duration,
    max_per_wallet: i64,
    purge_every: Duration,
}

impl NonceRegistry {
    pub fn new(
        pool: Pool,
        writers: Writers,
        ttl: Duration,
        max_per_wallet: u32,
        purge_every: Duration,
    ) -> Self {
        NonceRegistry {
            pool,
            writers,
            ttl,
            max_per_wallet: i64::from(max_per_wallet.max(1)),
            purge_every,
        }
    }
}

impl Actor for NonceRegistry {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(self.purge_every, |act, ctx| {
            let pool = act.pool.clone();
            ctx.spawn(
                async move {
                    match purge_expired(&pool).await {
                        Ok(0) => {}
                        Ok(n) => tracing::debug!(purged = n, "expired nonces purged"),
                        Err(e) => tracing::warn!(error = %e, "nonce purge failed"),
                    }
                }
                .into_actor(act),
            );
        });
    }
}

/// Issue a nonce for `pubkey`, valid for `action` only, for the configured lifetime.
#[derive(Message)]
#[rtype(result = "ActorResult<IssuedNonce>")]
pub struct IssueNonce {
    pub pubkey: String,
    pub action: String,
}

#[derive(Debug, Clone)]
pub struct IssuedNonce {
    pub nonce: String,
    pub expires_at: DateTime<Utc>,
}

/// Spend a nonce. `Ok(true)` for exactly one caller; `Ok(false)` when the nonce was
/// never issued to this wallet for this action, is already spent, or has expired.
#[derive(Message)]
#[rtype(result = "ActorResult<bool>")]
pub struct ConsumeNonce {
    pub pubkey: String,
    pub nonce: String,
    pub action: String,
}

impl Handler<IssueNonce> for NonceRegistry {
    type Result = ResponseFuture<ActorResult<IssuedNonce>>;

    fn handle(&mut self, msg: IssueNonce, _: &mut Self::Context) -> Self::Result {
        let writers = self.writers.clone();
        let cmd = nonces::IssueNonce {
            pubkey: msg.pubkey,
            nonce: new_nonce(),
            action: msg.action,
            ttl_ms: i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX),
            keep: self.max_per_wallet,
        };
        Box::pin(async move {
            let nonce = cmd.nonce.clone();
            let expires_at = write(&writers, cmd).await?;
            Ok(IssuedNonce { nonce, expires_at })
        })
    }
}

impl Handler<ConsumeNonce> for NonceRegistry {
    type Result = ResponseFuture<ActorResult<bool>>;

    fn handle(&mut self, msg: ConsumeNonce, _: &mut Self::Context) -> Self::Result {
        let writers = self.writers.clone();
        let cmd = nonces::ConsumeNonce {
            pubkey: msg.pubkey,
            nonce: msg.nonce,
            action: msg.action,
        };
        Box::pin(async move { write(&writers, cmd).await })
    }
}

async fn purge_expired(pool: &Pool) -> ActorResult<u64> {
    let client = pool.get().await?;
    Ok(client.execute(queries::PURGE_EXPIRED_NONCES, &[]).await?)
}

/// 128 bits from the operating system's CSPRNG, as 32 lowercase hex characters.
fn new_nonce() -> String {
    let mut bytes = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::auth_message::is_valid_nonce;

    #[test]
    fn nonces_are_32_hex_and_distinct() {
        let a = new_nonce();
        let b = new_nonce();
        assert!(is_valid_nonce(&a) && is_valid_nonce(&b));
        assert_ne!(a, b);
    }
}
