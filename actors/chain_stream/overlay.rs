//! The processed overlay, published (docs/design.md §15): what the slot tree
//! holds of the best chain, as index writes laid over the confirmed view in
//! PostgreSQL (`lendex_store::overlay`), so that every replica serves the same
//! processed view in the one order. Published as a difference from what was
//! laid: at once when the source pauses, at most `PUBLISH_EVERY` apart while
//! it does not. A new leader's first publication takes back whatever the
//! last one left.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::{Registered, StreamDeps};
use crate::chain::source::AccountUpdate;
use crate::domain::forks::SlotTree;
use crate::domain::pubkey::Pubkey;
use crate::error::{ActorError, ActorResult};
use crate::health_cache::{Reaches, commit};
use crate::ingest::Streamed;
use lendex_store::chain_writes::{AccountWrite, SyncPosition};
use lendex_store::overlay::{self, PublishOverlay};
use lendex_store::registered::held_position;

/// While updates keep coming, the overlay is published at most this far apart.
pub(super) const PUBLISH_EVERY: Duration = Duration::from_millis(20);

pub(super) struct Publisher {
    /// What the database's overlay holds as laid: each account's (slot,
    /// write version). None until the first publication read it.
    laid: Option<HashMap<Pubkey, (u64, u64)>>,
    /// Something changed since the last publication.
    dirty: bool,
    /// Accounts left the processed view other than by their confirmation.
    rolled_back: bool,
    /// When the earliest unpublished change was heard.
    heard: Option<Instant>,
    last: Option<Instant>,
}

impl Publisher {
    pub(super) fn new() -> Publisher {
        Publisher {
            laid: None,
            // The last leader's overlay is taken back at the first chance.
            dirty: true,
            rolled_back: true,
            heard: None,
            last: None,
        }
    }

    pub(super) fn changed(&mut self, rolled_back: bool, heard: Instant) {
        self.dirty = true;
        self.rolled_back |= rolled_back;
        self.heard.get_or_insert(heard);
    }

    /// Whether to publish now: something changed, and the source paused or
    /// the last publication is `PUBLISH_EVERY` old.
    pub(super) fn due(&self, paused: bool) -> bool {
        self.dirty && (paused || self.last.is_none_or(|at| at.elapsed() >= PUBLISH_EVERY))
    }

    pub(super) fn dirty(&self) -> bool {
        self.dirty
    }

    /// Lays what the tree's best chain holds, and takes back what it no
    /// longer does.
    pub(super) async fn publish(
        &mut self,
        deps: &StreamDeps,
        registered: &mut Registered,
        tree: &SlotTree<AccountUpdate>,
    ) -> ActorResult<()> {
        let mut laid = match self.laid.take() {
            Some(laid) => laid,
            None => {
                let client = deps
                    .db
                    .get()
                    .await
                    .map_err(lendex_store::error::DbError::from)?;
                let held = overlay::accounts(&**client, deps.ingest.cluster).await?;
                held.into_iter().map(|account| (account, (0, 0))).collect()
            }
        };
        let now = tree.processed();
        let changed: Vec<AccountUpdate> = (now.iter())
            .filter(|(account, w)| laid.get(account) != Some(&(w.slot, version(w))))
            .map(|(_, w)| (*w).clone())
            .collect();
        let retract: Vec<Pubkey> = (laid.keys())
            .filter(|account| !now.contains_key(account))
            .copied()
            .collect();
        let mut set = Vec::with_capacity(changed.len());
        for account in &changed {
            set.extend(index_write(deps, registered, account).await?);
        }
        let publish = PublishOverlay {
            cluster: deps.ingest.cluster,
            set,
            retract: retract.clone(),
            rolled_back: self.rolled_back,
        };
        let reaches = Reaches::Queued { heard: self.heard };
        let result = commit(&deps.writer, &deps.cache, publish, reaches).await;
        if result.is_ok() {
            for account in &retract {
                laid.remove(account);
            }
            for account in &changed {
                laid.insert(account.pubkey, (account.slot, version(account)));
            }
            self.dirty = false;
            self.rolled_back = false;
            self.heard = None;
        }
        self.laid = Some(laid);
        self.last = Some(Instant::now());
        result
    }
}

fn version(account: &AccountUpdate) -> u64 {
    account.write_version.unwrap_or(0)
}

/// A processed write as the index would store it: of a registered pool, a
/// feed a pool names, or the closing of a position the index holds.
/// Anything else lays nothing.
async fn index_write(
    deps: &StreamDeps,
    registered: &mut Registered,
    account: &AccountUpdate,
) -> Result<Option<AccountWrite>, ActorError> {
    if deps.is_feed(&account.pubkey) {
        return Ok(deps.ingest.streamed_feed(account).map(AccountWrite::Feed));
    }
    match deps.ingest.streamed(account) {
        Streamed::Write { pool, write } => {
            Ok(registered.contains(deps, &pool).await?.then_some(*write))
        }
        Streamed::Closed { account: key, slot } => {
            let held = held_position(&deps.db, deps.ingest.cluster, &key).await?;
            Ok(held.map(|(owner, pool)| {
                let cluster = deps.ingest.cluster;
                let keys = (pool, key, owner);
                AccountWrite::Position(SyncPosition::removal(
                    cluster,
                    keys,
                    slot,
                    account.write_version,
                ))
            }))
        }
        Streamed::Skipped(_) => Ok(None),
    }
}
