//! The one ingest step: chain reads of a registered pool's accounts (their bytes
//! and the slot they were read at) become the typed index writes of
//! `db::chain_writes`, whoever read them: an on-demand sync, a pool's
//! registration, a websocket notification or the reconciliation. Each of those
//! writes returns the engine changes it made (`db::chain_writes::IndexWrite`),
//! which `actors::health_cache::commit` hands to this replica's engine.
//!
//! Pure: decoding, the account checks, the slot rule of notifications and
//! the order rule of streamed writes (`streamed`). The
//! reads and the writes are its callers' (`http::handlers`, `actors::chain_stream`,
//! `actors::chain_sync`); whether a pool is registered is asked of
//! `db::registered`, before any read.

mod grpc;
mod websocket;

use lendex_domain::accounts::{
    AccountCheck, LendingPool, check_pool, check_position, mint_decimals, pool_address,
    position_address,
};
use lendex_domain::index_writes::{
    AccountWrite, RECONCILE_PART, RefreshPoolPositions, RegisterPool, SyncFeed, SyncPool,
    SyncPosition,
};
use lendex_domain::pubkey::Pubkey;
use lendex_domain::pyth::{FeedAccount, FeedPrice, judge};
use lendex_domain::raw::{AccountRead, AccountUpdate, RawAccount};

pub use grpc::{Streamed, latest};

/// Why a pool read or a registration is refused: the caller's mistake, never
/// ours. The HTTP edge answers each with the spec's body (docs/design.md §4.8, §4.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// No account at the address.
    Absent,
    /// Not the program's pool at that address, or not what the call claims.
    Invalid,
    /// The caller is not the pool's on-chain authority.
    NotTheAuthority,
}

impl From<AccountCheck> for Refused {
    fn from(check: AccountCheck) -> Self {
        match check {
            AccountCheck::Absent => Refused::Absent,
            AccountCheck::Invalid => Refused::Invalid,
        }
    }
}
pub use websocket::{Notifications, sort_out};

/// What every ingest needs to know: whose accounts, under which cluster
/// the rows are kept, and who owns feed accounts.
#[derive(Debug, Clone, Copy)]
pub struct Ingest {
    pub program: Pubkey,
    pub cluster: &'static str,
    /// The Pyth receiver program, when the pools' feeds are read (`[oracle]
    /// feeds`); None reads none.
    pub receiver: Option<Pubkey>,
}

/// A pool registration as asked (POST /api/pools/init), after its signature
/// was verified: what the body claims, checked against the chain here.
pub struct Registration<'a> {
    pub actor: Pubkey,
    pub pool: Pubkey,
    pub mint: Pubkey,
    pub authority: Pubkey,
    pub vault: Pubkey,
    /// (pool, authority, vault)
    pub bumps: (u8, u8, u8),
    pub symbol: Option<&'a str>,
    pub init_signature: &'a str,
}

impl Ingest {
    /// A pool's feed account as read (a missing account is a reading too):
    /// its write, judged as docs/design.md §17 says; None when feeds are not
    /// read.
    pub fn feed(&self, feed: &Pubkey, read: &AccountRead, catch_up: bool) -> Option<SyncFeed> {
        let account = read.account.as_ref().filter(|a| a.lamports > 0);
        self.judged_feed(
            feed,
            account.map(|a| (&a.owner, a.data.as_slice())),
            (read.slot, None),
            catch_up,
        )
    }

    /// A feed account as a live source carried it (0 lamports: gone).
    pub fn streamed_feed(&self, update: &AccountUpdate) -> Option<SyncFeed> {
        let account =
            (update.lamports != Some(0)).then_some((&update.owner, update.data.as_slice()));
        self.judged_feed(
            &update.pubkey,
            account,
            (update.slot, update.write_version),
            false,
        )
    }

    fn judged_feed(
        &self,
        feed: &Pubkey,
        account: Option<(&Pubkey, &[u8])>,
        (slot, write_version): (u64, Option<u64>),
        catch_up: bool,
    ) -> Option<SyncFeed> {
        let receiver = self.receiver?;
        let account = account.map(|(owner, data)| FeedAccount { owner, data });
        let (status, update) = judge(Some(feed), account, &receiver);
        Some(SyncFeed {
            cluster: self.cluster,
            feed: *feed,
            status,
            price: update.as_ref().map(FeedPrice::from),
            slot,
            write_version,
            catch_up,
        })
    }

    /// A pool's state as read: its write. `catch_up` (the reconciliation)
    /// writes only over an older read, never over one of the same slot.
    pub fn pool(
        &self,
        pool: &Pubkey,
        read: &AccountRead,
        symbol: Option<&str>,
        catch_up: bool,
    ) -> Result<SyncPool, AccountCheck> {
        Ok(SyncPool {
            cluster: self.cluster,
            pool_address: pool.to_string(),
            pool: check_pool(&self.program, read.parts())?,
            slot: read.slot,
            write_version: None,
            symbol: symbol.map(str::to_string),
            catch_up,
        })
    }

    /// POST /api/positions/sync: the pool and the wallet's position read
    /// together. The position's address is derived (the caller never gives it);
    /// a position gone from the chain is removed. Also says whether it exists.
    pub fn position(
        &self,
        pool: &Pubkey,
        owner: &Pubkey,
        pool_read: &AccountRead,
        position_read: &AccountRead,
    ) -> Result<(SyncPosition, bool), AccountCheck> {
        let pool_state = check_pool(&self.program, pool_read.parts())?;
        let position = match check_position(&self.program, position_read.parts(), pool, Some(owner))
        {
            Ok(position) => Some(position),
            Err(AccountCheck::Absent) => None, // closed on chain: the row goes
            Err(e) => return Err(e),
        };
        let exists = position.is_some();
        let write = SyncPosition {
            cluster: self.cluster,
            pool_address: pool.to_string(),
            pool: Some(pool_state),
            position_address: self.position_address(pool, owner).to_string(),
            owner: *owner,
            position,
            slot: pool_read.slot.min(position_read.slot),
            write_version: None,
        };
        Ok((write, exists))
    }

    /// The address of `owner`'s position in `pool`.
    pub fn position_address(&self, pool: &Pubkey, owner: &Pubkey) -> Pubkey {
        position_address(&self.program, pool, owner).0
    }

    /// A pool account as read from chain: a LendingPool of the program, at the
    /// pool address of its own mint (else `invalid`; absent: not found). What a
    /// registration of it must send (GET /api/pools/{address}/chain).
    pub fn pool_on_chain(&self, pool: &Pubkey, read: &AccountRead) -> Result<LendingPool, Refused> {
        let decoded = check_pool(&self.program, read.parts())?;
        if pool_address(&self.program, &decoded.token_mint).0 != *pool {
            return Err(Refused::Invalid);
        }
        Ok(decoded)
    }

    /// POST /api/pools/init: the pool and its mint read from chain, checked
    /// against the body (docs/design.md §4.8), into the registration's write.
    pub fn registration(
        &self,
        call: &Registration<'_>,
        pool_read: &AccountRead,
        mint_read: &AccountRead,
    ) -> Result<RegisterPool, Refused> {
        let pool = self.pool_on_chain(&call.pool, pool_read)?;
        if pool.token_mint != call.mint {
            return Err(Refused::Invalid);
        }
        // Only the pool's on-chain authority may list it.
        if pool.authority != call.actor {
            return Err(Refused::NotTheAuthority);
        }
        if pool.authority != call.authority
            || pool.vault != call.vault
            || (pool.pool_bump, pool.authority_bump, pool.vault_bump) != call.bumps
        {
            return Err(Refused::Invalid);
        }
        let decimals = mint_read
            .account
            .as_ref()
            .and_then(|mint| mint_decimals(&mint.owner, &mint.data))
            .ok_or(Refused::Invalid)?;
        Ok(RegisterPool {
            cluster: self.cluster,
            pool_address: call.pool.to_string(),
            pool,
            slot: pool_read.slot,
            symbol: call.symbol.map(str::to_string),
            decimals,
            created_by: call.actor.to_string(),
            init_signature: call.init_signature.to_string(),
        })
    }

    /// A full scan of a pool's positions at `slot`: every account that is a
    /// position of this pool, upserted; the pool's rows the scan no longer
    /// found, removed. Accounts that are not (another program's, another
    /// pool's, undecodable) are left out. In parts of at most
    /// `RECONCILE_PART` positions, to be written in order; the last prunes.
    pub fn reconcile(
        &self,
        pool: &Pubkey,
        slot: u64,
        accounts: Vec<(Pubkey, RawAccount)>,
    ) -> Vec<RefreshPoolPositions> {
        let mut positions: Vec<_> = accounts
            .into_iter()
            .filter_map(|(key, account)| {
                check_position(
                    &self.program,
                    Some((&account.owner, &account.data)),
                    pool,
                    None,
                )
                .ok()
                .map(|p| (key.to_string(), p))
            })
            .collect();
        let scanned: Vec<String> = positions.iter().map(|(a, _)| a.clone()).collect();
        let mut parts = Vec::new();
        while positions.len() > RECONCILE_PART {
            let rest = positions.split_off(RECONCILE_PART);
            parts.push(std::mem::replace(&mut positions, rest));
        }
        parts.push(positions);
        let last = parts.len() - 1;
        parts
            .into_iter()
            .enumerate()
            .map(|(i, positions)| RefreshPoolPositions {
                cluster: self.cluster,
                pool_address: pool.to_string(),
                slot,
                positions,
                prune_all_but: (i == last).then(|| scanned.clone()),
            })
            .collect()
    }
}

/// Writes grouped by the slot of their data, older slots first, each group
/// in arrival order: what a source delivered for one slot is committed
/// together (`db::chain_writes::SlotWrites`).
pub fn by_slot(writes: Vec<AccountWrite>) -> Vec<Vec<AccountWrite>> {
    let mut groups: std::collections::BTreeMap<u64, Vec<AccountWrite>> = Default::default();
    for write in writes {
        groups.entry(write.slot()).or_default().push(write);
    }
    groups.into_values().collect()
}

#[cfg(test)]
mod tests;
