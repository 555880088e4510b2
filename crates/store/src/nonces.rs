//! Handshake nonces as writes of the writer's auth lane: issuing one and
//! spending one, each alone or many at once (group commit: one INSERT, one
//! DELETE per batch). The auth lane has its own connection, so spending a
//! nonce never waits behind the writes it gates, and its batches may apply
//! issues and spends in any order: a nonce cannot be spent in the batch that
//! issues it (its holder learns it only after that batch commits).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use deadpool_postgres::Transaction;
use futures_util::future::BoxFuture;

use super::queries;
use super::writes::{Lane, WriteCommand};
use crate::error::{DbError, DbResult};

/// Issue `nonce` to `pubkey` for `action`, valid `ttl_ms`; the wallet keeps its
/// newest `keep` nonces.
#[derive(Debug, Clone)]
pub struct IssueNonce {
    pub pubkey: String,
    pub nonce: String,
    pub action: String,
    pub ttl_ms: i64,
    pub keep: i64,
}

impl WriteCommand for IssueNonce {
    /// When it expires.
    type Output = DateTime<Utc>;
    const LANE: Lane = Lane::Auth;
    const MULTI_ROW: bool = true;

    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<DateTime<Utc>>> {
        Box::pin(async move {
            tx.execute(queries::LOCK_WALLET_NONCES, &[&self.pubkey])
                .await?;
            let row = tx
                .query_one(
                    queries::ISSUE_NONCE,
                    &[&self.pubkey, &self.nonce, &self.action, &self.ttl_ms],
                )
                .await?;
            tx.execute(queries::TRIM_WALLET_NONCES, &[&self.pubkey, &self.keep])
                .await?;
            Ok(row.get(0))
        })
    }

    fn apply_all<'a>(
        cmds: Vec<&'a Self>,
        tx: &'a Transaction<'a>,
    ) -> BoxFuture<'a, DbResult<Vec<DateTime<Utc>>>> {
        Box::pin(async move {
            let Some(first) = cmds.first() else {
                return Ok(Vec::new());
            };
            let wallets: Vec<&str> = cmds.iter().map(|c| c.pubkey.as_str()).collect();
            let nonces: Vec<&str> = cmds.iter().map(|c| c.nonce.as_str()).collect();
            let actions: Vec<&str> = cmds.iter().map(|c| c.action.as_str()).collect();
            tx.execute(queries::LOCK_WALLETS_NONCES, &[&wallets])
                .await?;
            let stmt = tx.prepare_cached(queries::ISSUE_NONCES).await?;
            let rows = tx
                .query(&stmt, &[&wallets, &nonces, &actions, &first.ttl_ms])
                .await?;
            let stmt = tx.prepare_cached(queries::TRIM_WALLETS_NONCES).await?;
            tx.execute(&stmt, &[&wallets, &first.keep]).await?;
            let expiry: HashMap<String, DateTime<Utc>> =
                rows.iter().map(|r| (r.get(0), r.get(1))).collect();
            cmds.iter()
                .map(|c| {
                    expiry
                        .get(&c.nonce)
                        .copied()
                        .ok_or_else(|| DbError::failed("an issued nonce has no expiry"))
                })
                .collect()
        })
    }
}

/// Spend a nonce: true for exactly one caller; false when it was never issued
/// to this wallet for this action, is already spent, or has expired.
#[derive(Debug, Clone)]
pub struct ConsumeNonce {
    pub pubkey: String,
    pub nonce: String,
    pub action: String,
}

impl WriteCommand for ConsumeNonce {
    type Output = bool;
    const LANE: Lane = Lane::Auth;
    const MULTI_ROW: bool = true;

    fn apply<'a>(&'a self, tx: &'a Transaction<'a>) -> BoxFuture<'a, DbResult<bool>> {
        Box::pin(async move {
            let stmt = tx.prepare_cached(queries::CONSUME_NONCE).await?;
            let row = tx
                .query_opt(&stmt, &[&self.pubkey, &self.nonce, &self.action])
                .await?;
            Ok(row.is_some())
        })
    }

    /// One DELETE for the run. A row named twice (concurrent double use in one
    /// batch) is deleted and returned once, and only its first caller gets true.
    fn apply_all<'a>(
        cmds: Vec<&'a Self>,
        tx: &'a Transaction<'a>,
    ) -> BoxFuture<'a, DbResult<Vec<bool>>> {
        Box::pin(async move {
            let wallets: Vec<&str> = cmds.iter().map(|c| c.pubkey.as_str()).collect();
            let nonces: Vec<&str> = cmds.iter().map(|c| c.nonce.as_str()).collect();
            let actions: Vec<&str> = cmds.iter().map(|c| c.action.as_str()).collect();
            let stmt = tx.prepare_cached(queries::CONSUME_NONCES).await?;
            let rows = tx.query(&stmt, &[&wallets, &nonces, &actions]).await?;
            let mut spent: HashMap<(String, String, String), bool> = rows
                .iter()
                .map(|r| ((r.get(0), r.get(1), r.get(2)), true))
                .collect();
            Ok(cmds
                .iter()
                .map(|c| {
                    let key = (c.pubkey.clone(), c.nonce.clone(), c.action.clone());
                    // The first caller takes it; any other finds it spent.
                    spent.get_mut(&key).is_some_and(std::mem::take)
                })
                .collect())
        })
    }
}
