//! The health-factor cache: owns, per owner, the positions and the pool inputs
//! they depend on, and the owner's account health factor; keeps the unhealthy
//! owners ranked by health factor so the liquidators' feed is answered from
//! memory with no database query.
//!
//! Coherence: every change to positions or pool pricing, whoever makes it (this
//! replica, another replica, an external indexer), arrives as a PostgreSQL NOTIFY
//! (sql/0002). A position change re-scores that owner; a pool change re-scores
//! only the owners with a position in that pool. After a lost LISTEN connection
//! the cache reloads everything, since notifications may have been missed.
//!
//! Memory is bounded: healthy owners live in an LRU of `cache.max_owners`.
//! Unhealthy owners are never evicted (the feed must be complete), and a pool
//! change re-scores evicted owners from the database (the fallback).
//! positions.health_factor_wad is kept equal to what this cache computes.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::num::NonZeroUsize;
use std::time::Duration;

use actix::prelude::*;
use actix_web::web::Bytes;
use chrono::Utc;
use deadpool_postgres::Pool;
use futures_util::{StreamExt, pin_mut};
use lru::LruCache;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::Row;
use utoipa::ToSchema;

use crate::actors::db_writer::{DbWriter, write};
use crate::db::chain_writes::{SetHealthFactors, num, pool_pricing};
use crate::db::queries;
use crate::domain::pubkey::Pubkey;
use crate::domain::rates::{RateModel, pool_apys};
use crate::domain::wad::{Big, PoolPricing, PositionAmounts, WAD, account_health_factor};
use crate::error::{ApiError, ApiResult};

type Key = [u8; 32];
type PoolId = u32;
/// foldhash: several times faster than SipHash on these keys, and still seeded per
/// process, so crafted owner keys cannot flood one bucket.
type Hasher = foldhash::fast::RandomState;
type FastMap<K, V> = HashMap<K, V, Hasher>;
type FastSet<K> = HashSet<K, Hasher>;

/// How long write-backs of health factors are gathered before one bulk UPDATE.
const WRITE_BACK_EVERY: Duration = Duration::from_millis(50);
/// Events a slow SSE subscriber may fall behind before it is dropped.
const SUBSCRIBER_BUFFER: usize = 4096;

struct PoolEntry {
    address: String,
    symbol: Option<String>,
    pricing: PoolPricing,
    rates: RateModel,
    total_deposits: u64,
    total_borrows: u64,
    last_update_ts: i64,
    supply_apy: f64,
    borrow_apy: f64,
    /// Slots of resident owners with a position in this pool.
    members: FastSet<Slot>,
    /// Some owner of this pool was evicted: a change must also re-score from the database.
    has_evicted_members: bool,
}

#[derive(Debug, Clone)]
struct CachedPosition {
    address: Key,
    pool: PoolId,
    amounts: PositionAmounts,
    original_deposit: u64,
    synced_us: i64,
}

/// One resident owner. Owners live in a contiguous slab (`owners`), found by key
/// through `index`; pools and the LRU refer to them by slot, so a price move walks
/// slot numbers and dense memory instead of hashing 32-byte keys per owner.
struct OwnerSlot {
    key: Key,
    positions: Vec<CachedPosition>,
    hf: u128,
    /// The value last known to be stored in positions.health_factor_wad.
    stored_hf: Option<u128>,
}

type Slot = u32;

/// Spec 2.4, plus oracle freshness for liquidators.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UnhealthyRow {
    pub position_address: String,
    pub pool_address: String,
    pub owner: String,
    pub deposit_shares: String,
    pub borrow_principal: String,
    pub health_factor_wad: String,
    pub account_health_factor_wad: String,
    /// True when any pool of the account has an oracle price older than
    /// `health.max_oracle_age_seconds` (by the pool's on-chain last_update_ts).
    pub oracle_stale: bool,
}

/// One row of GET /api/positions/{user}/detail, before borrow_txs are attached.
#[derive(Debug, Clone)]
pub struct DetailRow {
    pub pool_address: String,
    pub symbol: String,
    pub deposit_shares: u64,
    pub borrow_principal: u64,
    pub deposit_tokens: Big,
    pub borrow_debt: Big,
    pub original_deposit: u64,
    pub supply_apy: f64,
    pub borrow_apy: f64,
    pub health_factor_wad: u128,
}

pub struct HealthCache {
    db: Pool,
    writer: Addr<DbWriter>,
    database_url: String,
    cluster: &'static str,
    max_oracle_age_seconds: i64,
    pools: FastMap<PoolId, PoolEntry>,
    pool_ids: FastMap<String, PoolId>,
    next_pool_id: PoolId,
    owners: Vec<OwnerSlot>,
    index: FastMap<Key, Slot>,
    free: Vec<Slot>,
    /// Healthy resident owners by recency; the least recent is evicted past
    /// `cache.max_owners`. Unhealthy owners are not in it and are never evicted.
    lru: LruCache<Slot, (), Hasher>,
    /// Unhealthy owners, most underwater first.
    ranking: BTreeSet<(u128, Key)>,
    evictions: u64,
    ready: bool,
    pending_writes: FastMap<Key, u128>,
    write_scheduled: bool,
    pending: Pending,
    fetching: bool,
    /// Bumped by any change that can alter an unhealthy answer.
    feed_version: u64,
    /// Rendered JSON of recent unhealthy answers, by (pool filter, limit); valid for
    /// one feed version and at most one second (oracle staleness moves with time).
    rendered: HashMap<(Option<PoolId>, usize), Bytes>,
    rendered_at: (u64, i64),
    subscribers: Vec<mpsc::Sender<Bytes>>,
}

impl HealthCache {
    pub fn new(
        db: Pool,
        writer: Addr<DbWriter>,
        database_url: String,
        cluster: &'static str,
        max_owners: usize,
        max_oracle_age_seconds: u64,
    ) -> Self {
        HealthCache {
            db,
            writer,
            database_url,
            cluster,
            max_oracle_age_seconds: i64::try_from(max_oracle_age_seconds).unwrap_or(i64::MAX),
            pools: FastMap::default(),
            pool_ids: FastMap::default(),
            next_pool_id: 0,
            owners: Vec::new(),
            index: FastMap::default(),
            free: Vec::new(),
            lru: LruCache::with_hasher(
                NonZeroUsize::new(max_owners.max(1)).expect("max(1) is non-zero"),
                Hasher::default(),
            ),
            ranking: BTreeSet::new(),
            evictions: 0,
            ready: false,
            pending_writes: FastMap::default(),
            write_scheduled: false,
            pending: Pending::default(),
            fetching: false,
            feed_version: 0,
            rendered: HashMap::new(),
            rendered_at: (0, 0),
            subscribers: Vec::new(),
        }
    }

    // ---- pools ----------------------------------------------------------------

    fn upsert_pool(&mut self, row: &Row) -> ApiResult<PoolId> {
        let address: String = row.get("pool_address");
        let pricing = pool_pricing(row)?;
        let rates = RateModel {
            base_rate_wad: num(row, "base_rate_wad")?,
            optimal_util_wad: num(row, "optimal_util_wad")?,
            slope1_wad: num(row, "slope1_wad")?,
            slope2_wad: num(row, "slope2_wad")?,
            reserve_factor_wad: num(row, "reserve_factor_wad")?,
        };
        let total_deposits: u64 = num(row, "total_deposits")?;
        let total_borrows: u64 = num(row, "total_borrows")?;
        let (supply_apy, borrow_apy) = pool_apys(&rates, total_borrows, total_deposits);
        let id = match self.pool_ids.get(&address) {
            Some(id) => *id,
            None => {
                let id = self.next_pool_id;
                self.next_pool_id += 1;
                self.pool_ids.insert(address.clone(), id);
                id
            }
        };
        let entry = self.pools.entry(id).or_insert_with(|| PoolEntry {
            address,
            symbol: None,
            pricing,
            rates,
            total_deposits,
            total_borrows,
            last_update_ts: 0,
            supply_apy,
            borrow_apy,
            members: FastSet::default(),
            has_evicted_members: false,
        });
        self.feed_version += 1;
        entry.symbol = row.get("symbol");
        entry.pricing = pricing;
        entry.rates = rates;
        entry.total_deposits = total_deposits;
        entry.total_borrows = total_borrows;
        entry.last_update_ts = row.get("last_update_ts");
        entry.supply_apy = supply_apy;
        entry.borrow_apy = borrow_apy;
        Ok(id)
    }

    // ---- owners ---------------------------------------------------------------

    fn owner(&self, key: &Key) -> Option<&OwnerSlot> {
        self.index.get(key).map(|s| &self.owners[*s as usize])
    }

    fn alloc(&mut self, key: Key) -> Slot {
        let slot = OwnerSlot {
            key,
            positions: Vec::new(),
            hf: u128::MAX,
            stored_hf: None,
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.owners[id as usize] = slot;
                id
            }
            None => {
                self.owners.push(slot);
                (self.owners.len() - 1) as Slot
            }
        };
        self.index.insert(key, id);
        id
    }

    /// Forgets a slot: out of the index, the ranking, the LRU and its pools.
    fn release(&mut self, id: Slot) {
        let slot = &mut self.owners[id as usize];
        let positions = std::mem::take(&mut slot.positions);
        let (key, hf) = (slot.key, slot.hf);
        for p in &positions {
            if let Some(pool) = self.pools.get_mut(&p.pool) {
                pool.members.remove(&id);
            }
        }
        if hf < WAD {
            self.ranking.remove(&(hf, key));
        }
        self.lru.pop(&id);
        self.index.remove(&key);
        self.free.push(id);
    }

    /// Replaces an owner's positions (empty removes the owner) and re-scores it.
    fn set_owner(&mut self, key: Key, positions: Vec<CachedPosition>, stored_hf: Option<u128>) {
        let existing = self.index.get(&key).copied();
        if positions.is_empty() {
            if let Some(id) = existing {
                let was_unhealthy = self.owners[id as usize].hf < WAD;
                self.release(id);
                if was_unhealthy {
                    self.feed_version += 1;
                    self.emit("candidate_stop", &key, u128::MAX, &[]);
                }
            }
            return;
        }
        let (id, old) = match existing {
            Some(id) => {
                let slot = &mut self.owners[id as usize];
                let old = (slot.hf, slot.positions.len());
                for p in std::mem::take(&mut slot.positions) {
                    if let Some(pool) = self.pools.get_mut(&p.pool) {
                        pool.members.remove(&id);
                    }
                }
                (id, Some(old))
            }
            None => (self.alloc(key), None),
        };
        for p in &positions {
            if let Some(pool) = self.pools.get_mut(&p.pool) {
                pool.members.insert(id);
            }
        }
        let hf = score(&self.pools, &positions);
        let slot = &mut self.owners[id as usize];
        slot.positions = positions;
        if stored_hf.is_some() {
            slot.stored_hf = stored_hf;
        }
        self.refile(id, hf, old);
    }

    /// Records an owner's new health factor and moves it between healthy and
    /// unhealthy; emits feed events on transitions: below 1 WAD now and not before
    /// (start), below before and now with another value or rows (update), below
    /// before and not now (stop). `old` is the previous (hf, row count), if any.
    fn refile(&mut self, id: Slot, hf: u128, old: Option<(u128, usize)>) {
        let slot = &mut self.owners[id as usize];
        let key = slot.key;
        let rows = slot.positions.len();
        slot.hf = hf;
        if slot.stored_hf != Some(hf) {
            self.pending_writes.insert(key, hf);
        }
        let was_unhealthy = old.is_some_and(|(h, _)| h < WAD);
        if was_unhealthy {
            self.feed_version += 1;
            self.ranking.remove(&(old.expect("was unhealthy").0, key));
        }
        if hf < WAD {
            self.feed_version += 1;
            self.ranking.insert((hf, key));
            self.lru.pop(&id);
            if !was_unhealthy {
                self.emit_owner("candidate_start", &key);
            } else if old != Some((hf, rows)) {
                self.emit_owner("candidate_update", &key);
            }
        } else {
            if was_unhealthy {
                self.emit("candidate_stop", &key, hf, &[]);
            }
            if let Some((evicted, ())) = self.lru.push(id, ())
                && evicted != id
            {
                self.evict(evicted);
            }
        }
    }

    /// An owner pushed out of the LRU: its pools remember that a member is missing.
    fn evict(&mut self, id: Slot) {
        self.evictions += 1;
        for p in &self.owners[id as usize].positions {
            if let Some(pool) = self.pools.get_mut(&p.pool) {
                pool.has_evicted_members = true;
            }
        }
        self.release(id);
    }

    /// Re-scores every resident member of a pool whose inputs changed. A healthy
    /// owner that stays healthy is updated in place, without touching the LRU
    /// order or the ranking (the common case of a price move).
    fn rescore_pool(&mut self, id: PoolId) {
        let members: Vec<Slot> = self
            .pools
            .get(&id)
            .map(|p| p.members.iter().copied().collect())
            .unwrap_or_default();
        self.pending_writes.reserve(members.len());
        for member in members {
            let slot = &mut self.owners[member as usize];
            let hf = score(&self.pools, &slot.positions);
            if slot.hf >= WAD && hf >= WAD {
                slot.hf = hf;
                if slot.stored_hf != Some(hf) {
                    self.pending_writes.insert(slot.key, hf);
                }
                continue;
            }
            let old = (slot.hf, slot.positions.len());
            self.refile(member, hf, Some(old));
        }
    }

    // ---- loading from the database -----------------------------------------------

    /// Groups position rows by owner and files each owner (owners in `expected`
    /// with no row are removed).
    fn apply_owner_rows(&mut self, rows: &[Row], expected: &[Key]) {
        let mut grouped = Grouped::default();
        for row in rows {
            group_rows(&mut grouped, &self.pool_ids, row);
        }
        for key in expected {
            grouped.entry(*key).or_default();
        }
        self.apply_grouped(grouped);
    }

    fn apply_grouped(&mut self, grouped: Grouped) {
        for (key, (positions, stored)) in grouped {
            self.set_owner(key, positions, stored.flatten());
        }
    }

    fn schedule_write_back(&mut self, ctx: &mut Context<Self>) {
        if self.write_scheduled || self.pending_writes.is_empty() {
            return;
        }
        self.write_scheduled = true;
        ctx.run_later(WRITE_BACK_EVERY, |act, ctx| {
            act.write_scheduled = false;
            let write = act.write_back(ctx);
            ctx.spawn(write.into_actor(act));
        });
    }

    /// Sends every pending health factor to the database writer; the future
    /// resolves once they are committed (or re-queued after a failure).
    fn write_back(&mut self, ctx: &mut Context<Self>) -> impl Future<Output = ()> + 'static {
        let pending = std::mem::take(&mut self.pending_writes);
        let me = ctx.address();
        let writer = self.writer.clone();
        let cluster = self.cluster;
        async move {
            if pending.is_empty() {
                return;
            }
            let (mut owners, mut hfs) = (
                Vec::with_capacity(pending.len()),
                Vec::with_capacity(pending.len()),
            );
            for (key, hf) in &pending {
                owners.push(Pubkey::new_from_array(*key).to_string());
                hfs.push(hf.to_string());
            }
            let result = write(
                &writer,
                SetHealthFactors {
                    cluster,
                    owners,
                    health_factors: hfs,
                },
            )
            .await;
            me.do_send(WrittenBack {
                pending,
                ok: result.is_ok(),
            });
        }
    }

    // ---- answers ----------------------------------------------------------------

    fn oracle_stale(&self, entry: &OwnerSlot, now: i64) -> bool {
        entry.positions.iter().any(|p| {
            self.pools.get(&p.pool).is_some_and(|pool| {
                pool.pricing.oracle_price.is_some()
                    && now - pool.last_update_ts > self.max_oracle_age_seconds
            })
        })
    }

    fn rows_of(
        &self,
        key: &Key,
        entry: &OwnerSlot,
        debt_in_pool: Option<PoolId>,
        now: i64,
    ) -> Vec<UnhealthyRow> {
        let owner = Pubkey::new_from_array(*key).to_string();
        let hf = entry.hf.to_string();
        let stale = self.oracle_stale(entry, now);
        let mut rows: Vec<UnhealthyRow> = entry
            .positions
            .iter()
            .filter(|p| {
                debt_in_pool.is_none_or(|pool| p.pool == pool && p.amounts.borrow_principal > 0)
            })
            .map(|p| UnhealthyRow {
                position_address: Pubkey::new_from_array(p.address).to_string(),
                pool_address: self
                    .pools
                    .get(&p.pool)
                    .map(|x| x.address.clone())
                    .unwrap_or_default(),
                owner: owner.clone(),
                deposit_shares: p.amounts.deposit_shares.to_string(),
                borrow_principal: p.amounts.borrow_principal.to_string(),
                health_factor_wad: hf.clone(),
                account_health_factor_wad: hf.clone(),
                oracle_stale: stale,
            })
            .collect();
        // Debt rows first, then by address, so pages are stable.
        rows.sort_by(|a, b| {
            (a.borrow_principal == "0", &a.position_address)
                .cmp(&(b.borrow_principal == "0", &b.position_address))
        });
        rows
    }

    fn emit_owner(&mut self, event: &str, key: &Key) {
        if self.subscribers.is_empty() {
            return;
        }
        let Some(entry) = self.owner(key) else { return };
        let rows = self.rows_of(key, entry, None, Utc::now().timestamp());
        let hf = entry.hf;
        self.emit(event, key, hf, &rows);
    }

    fn emit(&mut self, event: &str, key: &Key, hf: u128, rows: &[UnhealthyRow]) {
        if self.subscribers.is_empty() {
            return;
        }
        let payload = serde_json::json!({
            "owner": Pubkey::new_from_array(*key).to_string(),
            "account_health_factor_wad": hf.to_string(),
            "positions": rows,
        });
        let frame = Bytes::from(format!("event: {event}\ndata: {payload}\n\n"));
        // A subscriber that is gone or too slow is dropped.
        self.subscribers
            .retain(|s| s.try_send(frame.clone()).is_ok());
    }
}

/// One position row in the cache's compact form, with its stored health factor.
fn cached_position(
    pool_ids: &FastMap<String, PoolId>,
    row: &Row,
) -> Option<(Key, CachedPosition, u128)> {
    let parsed = (|| -> ApiResult<(Key, CachedPosition, u128)> {
        let owner = parse_key(row.get("owner"))?;
        let address = parse_key(row.get("position_address"))?;
        let pool_address: &str = row.get("pool_address");
        let pool = *pool_ids.get(pool_address).ok_or(ApiError::Internal)?;
        let position = CachedPosition {
            address,
            pool,
            amounts: PositionAmounts {
                deposit_shares: num(row, "deposit_shares")?,
                borrow_principal: num(row, "borrow_principal")?,
                borrow_idx_snap: num(row, "borrow_idx_snap")?,
            },
            original_deposit: num(row, "original_deposit")?,
            synced_us: row.get("synced_us"),
        };
        Ok((owner, position, num(row, "health_factor_wad")?))
    })();
    if parsed.is_err() {
        tracing::warn!(
            position = row.get::<_, &str>("position_address"),
            "position row not usable by the cache; skipped"
        );
    }
    parsed.ok()
}

/// Rows grouped per owner: the positions, and the stored health factor when every
/// row agrees on it (`None` otherwise: the rows need a write-back).
type Grouped = FastMap<Key, (Vec<CachedPosition>, Option<Option<u128>>)>;

fn group_rows(grouped: &mut Grouped, pool_ids: &FastMap<String, PoolId>, row: &Row) {
    if let Some((owner, position, stored)) = cached_position(pool_ids, row) {
        let slot = grouped.entry(owner).or_default();
        slot.0.push(position);
        slot.1 = match slot.1 {
            None => Some(Some(stored)),
            Some(Some(s)) if s == stored => Some(Some(s)),
            Some(_) => Some(None),
        };
    }
}

/// An owner's account health factor from its cached positions and the pools.
fn score(pools: &FastMap<PoolId, PoolEntry>, positions: &[CachedPosition]) -> u128 {
    account_health_factor(
        positions
            .iter()
            .filter_map(|p| pools.get(&p.pool).map(|pool| (&pool.pricing, &p.amounts))),
    )
}

fn parse_key(s: &str) -> ApiResult<Key> {
    s.parse::<Pubkey>()
        .map(|k| k.to_bytes())
        .map_err(|_| ApiError::Internal)
}

// ---- the update pipeline ------------------------------------------------------------
//
// Every change to the cached state comes from the database, and database reads
// can complete out of order. So changes are queued, and one read runs at a time:
// the next starts only after the previous one was applied. A full reload goes
// through the same queue. Reads of the cache (the feed) are never blocked.

#[derive(Default)]
struct Pending {
    reload_all: bool,
    owners: HashSet<String>,
    pools: HashSet<String>,
    /// Pools whose evicted owners must be re-scored from the database.
    fallback_pools: HashSet<String>,
    waiters: Vec<oneshot::Sender<ApiResult<()>>>,
}

impl Pending {
    fn is_empty(&self) -> bool {
        !self.reload_all
            && self.owners.is_empty()
            && self.pools.is_empty()
            && self.fallback_pools.is_empty()
    }
}

impl HealthCache {
    fn enqueue(
        &mut self,
        ctx: &mut Context<Self>,
        edit: impl FnOnce(&mut Pending),
        waiter: Option<oneshot::Sender<ApiResult<()>>>,
    ) {
        edit(&mut self.pending);
        self.pending.waiters.extend(waiter);
        self.pump(ctx);
    }

    fn pump(&mut self, ctx: &mut Context<Self>) {
        if self.fetching {
            return;
        }
        if self.pending.is_empty() {
            for w in self.pending.waiters.drain(..) {
                let _ = w.send(Ok(()));
            }
            return;
        }
        self.fetching = true;
        let batch = std::mem::take(&mut self.pending);
        let db = self.db.clone();
        let cluster = self.cluster;
        if batch.reload_all {
            self.pump_reload(ctx, db, cluster, batch);
        } else {
            self.pump_changes(ctx, db, cluster, batch);
        }
    }

    /// The whole cluster: pools, then every position streamed and parsed off the
    /// actor (a million rows never sit in memory twice).
    fn pump_reload(
        &mut self,
        ctx: &mut Context<Self>,
        db: Pool,
        cluster: &'static str,
        batch: Pending,
    ) {
        let pools_read = {
            let db = db.clone();
            async move {
                let client = db.get().await?;
                Ok::<_, ApiError>(client.query(queries::CACHE_ALL_POOLS, &[&cluster]).await?)
            }
        };
        let job = pools_read.into_actor(self).then(move |pool_rows, act, _| {
            let ids = pool_rows.map(|rows| {
                act.pools.clear();
                act.pool_ids.clear();
                for row in &rows {
                    if let Err(e) = act.upsert_pool(row) {
                        tracing::warn!(error = %e, "pool row not usable by the cache");
                    }
                }
                act.pool_ids.clone()
            });
            async move {
                let pool_ids = ids?;
                let client = db.get().await?;
                let params: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&cluster];
                let stream = client
                    .query_raw(queries::CACHE_ALL_POSITIONS, params)
                    .await?;
                pin_mut!(stream);
                let mut grouped = Grouped::default();
                while let Some(row) = stream.next().await {
                    group_rows(&mut grouped, &pool_ids, &row?);
                }
                Ok::<_, ApiError>(grouped)
            }
            .into_actor(act)
        });
        ctx.spawn(job.map(move |grouped, act, ctx| {
            let result = grouped.map(|grouped| {
                act.feed_version += 1;
                act.owners.clear();
                act.index.clear();
                act.free.clear();
                act.ranking.clear();
                act.lru.clear();
                for pool in act.pools.values_mut() {
                    pool.members.clear();
                    pool.has_evicted_members = false;
                }
                let owners = grouped.len();
                act.apply_grouped(grouped);
                act.ready = true;
                tracing::info!(
                    pools = act.pools.len(),
                    owners,
                    unhealthy = act.ranking.len(),
                    "health-factor cache loaded"
                );
            });
            if let Err(e) = &result {
                tracing::warn!(error = %e, "health-factor cache load failed; retrying");
                act.pending.reload_all = true;
            }
            act.finish_batch(ctx, batch.waiters, result);
        }));
    }

    /// Only what changed: the changed pools, the changed owners, and the owners of
    /// pools that had evicted members.
    fn pump_changes(
        &mut self,
        ctx: &mut Context<Self>,
        db: Pool,
        cluster: &'static str,
        batch: Pending,
    ) {
        let owners: Vec<String> = batch.owners.iter().cloned().collect();
        let pools: Vec<String> = batch.pools.iter().cloned().collect();
        let fallback: Vec<String> = batch.fallback_pools.iter().cloned().collect();
        let started = std::time::Instant::now();
        let read = async move {
            let client = db.get().await?;
            let pool_rows = if pools.is_empty() {
                Vec::new()
            } else {
                client
                    .query(queries::CACHE_POOLS, &[&cluster, &pools])
                    .await?
            };
            let owner_rows = if owners.is_empty() {
                Vec::new()
            } else {
                client
                    .query(queries::CACHE_OWNERS_POSITIONS, &[&cluster, &owners])
                    .await?
            };
            let mut fallback_rows = Vec::new();
            for pool in &fallback {
                fallback_rows.extend(
                    client
                        .query(queries::CACHE_POOL_OWNERS_POSITIONS, &[&cluster, pool])
                        .await?,
                );
            }
            Ok::<_, ApiError>((owners, pools, pool_rows, owner_rows, fallback_rows))
        };
        ctx.spawn(read.into_actor(self).map(move |result, act, ctx| {
            let fetched = started.elapsed();
            let applied = result.map(|(owners, pools, pool_rows, owner_rows, fallback_rows)| {
                act.apply_changes(ctx, &owners, &pools, &pool_rows, &owner_rows, &fallback_rows);
                tracing::debug!(
                    owners = owners.len(), pools = pools.len(),
                    fetch_ms = fetched.as_secs_f64() * 1e3,
                    apply_ms = (started.elapsed() - fetched).as_secs_f64() * 1e3,
                    "cache applied changes"
                );
            });
            if let Err(e) = &applied {
                tracing::warn!(error = %e, "cache could not read changed rows; reloading everything");
                act.pending.reload_all = true;
            }
            act.finish_batch(ctx, batch.waiters, applied);
        }));
    }

    fn apply_changes(
        &mut self,
        ctx: &mut Context<Self>,
        owners: &[String],
        pools: &[String],
        pool_rows: &[Row],
        owner_rows: &[Row],
        fallback_rows: &[Row],
    ) {
        // Pools first: owners re-scored below must see the new prices.
        let mut seen = FastSet::default();
        for row in pool_rows {
            if let Ok(id) = self.upsert_pool(row) {
                seen.insert(id);
                self.rescore_pool(id);
                if self.pools.get(&id).is_some_and(|p| p.has_evicted_members) {
                    // Owners not resident are re-scored from the database, next batch.
                    let address = self.pools[&id].address.clone();
                    self.pending.fallback_pools.insert(address);
                }
            }
        }
        // A changed pool missing from its read was deleted (its positions go with it).
        for address in pools {
            if let Some(id) = self.pool_ids.get(address).copied()
                && !seen.contains(&id)
            {
                self.feed_version += 1;
                self.pools.remove(&id);
                self.pool_ids.remove(address);
            }
        }
        let expected: Vec<Key> = owners.iter().filter_map(|o| parse_key(o).ok()).collect();
        self.apply_owner_rows(owner_rows, &expected);
        if !fallback_rows.is_empty() {
            self.apply_owner_rows(fallback_rows, &[]);
        }
        self.schedule_write_back(ctx);
    }

    fn finish_batch(
        &mut self,
        ctx: &mut Context<Self>,
        waiters: Vec<oneshot::Sender<ApiResult<()>>>,
        result: ApiResult<()>,
    ) {
        self.fetching = false;
        self.schedule_write_back(ctx);
        for w in waiters {
            let _ = w.send(result.clone());
        }
        if self.pending.reload_all && result.is_err() {
            // The database is unreachable: try again shortly rather than spin.
            ctx.run_later(Duration::from_secs(1), |act, ctx| act.pump(ctx));
        } else {
            self.pump(ctx);
        }
    }
}

impl Actor for HealthCache {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(65_536);
        let url = self.database_url.clone();
        let cluster = self.cluster;
        let me = ctx.address();
        actix_rt::spawn(listen_forever(url, cluster, me));
    }
}

// ---- messages -------------------------------------------------------------------

/// Loads every pool and position of the cluster; answers once applied (or failed:
/// the reload is then retried in the background).
#[derive(Message)]
#[rtype(result = "ApiResult<()>")]
pub struct LoadAll;

impl Handler<LoadAll> for HealthCache {
    type Result = ResponseFuture<ApiResult<()>>;

    fn handle(&mut self, _: LoadAll, ctx: &mut Self::Context) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.enqueue(ctx, |p| p.reload_all = true, Some(tx));
        Box::pin(async move { rx.await.unwrap_or(Err(ApiError::Internal)) })
    }
}

/// Owners and pools whose rows changed, from the LISTEN connection or from this
/// replica's own writes. Answers once the change is applied to the cache, so a
/// writer that awaits it gets read-your-writes on this replica.
#[derive(Message)]
#[rtype(result = "ApiResult<()>")]
pub struct Changed {
    pub owners: Vec<String>,
    pub pools: Vec<String>,
}

impl Handler<Changed> for HealthCache {
    type Result = ResponseFuture<ApiResult<()>>;

    fn handle(&mut self, msg: Changed, ctx: &mut Self::Context) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.enqueue(
            ctx,
            |p| {
                p.owners.extend(msg.owners);
                p.pools.extend(msg.pools);
            },
            Some(tx),
        );
        Box::pin(async move { rx.await.unwrap_or(Err(ApiError::Internal)) })
    }
}

/// The outcome of a write-back: mark the values stored, or queue them again.
#[derive(Message)]
#[rtype(result = "()")]
struct WrittenBack {
    pending: FastMap<Key, u128>,
    ok: bool,
}

impl Handler<WrittenBack> for HealthCache {
    type Result = ();

    fn handle(&mut self, msg: WrittenBack, ctx: &mut Self::Context) {
        if msg.ok {
            for (key, hf) in msg.pending {
                if let Some(id) = self.index.get(&key) {
                    let slot = &mut self.owners[*id as usize];
                    if slot.hf == hf {
                        slot.stored_hf = Some(hf);
                    }
                }
            }
        } else {
            tracing::warn!(
                owners = msg.pending.len(),
                "health factor write-back failed; will retry"
            );
            for (key, hf) in msg.pending {
                self.pending_writes.entry(key).or_insert(hf);
            }
            self.schedule_write_back(ctx);
        }
    }
}

/// Writes every pending health factor now and answers once committed (shutdown
/// flushes the cache's queued writes this way before draining the writer).
#[derive(Message)]
#[rtype(result = "()")]
pub struct FlushWrites;

impl Handler<FlushWrites> for HealthCache {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: FlushWrites, ctx: &mut Self::Context) -> Self::Result {
        Box::pin(self.write_back(ctx))
    }
}

/// Reload everything (after a lost LISTEN connection).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Resync;

impl Handler<Resync> for HealthCache {
    type Result = ();

    fn handle(&mut self, _: Resync, ctx: &mut Self::Context) {
        self.enqueue(ctx, |p| p.reload_all = true, None);
    }
}

/// GET /api/positions/unhealthy: owners below 1 WAD, most underwater first, with
/// all their rows (or, with `pool`, only their debt rows in that pool), as the
/// rendered JSON body `{"positions": [...]}`.
#[derive(Message)]
#[rtype(result = "ApiResult<Bytes>")]
pub struct Unhealthy {
    pub pool: Option<String>,
    pub limit: usize,
}

impl HealthCache {
    fn unhealthy_rows(&self, pool: Option<PoolId>, limit: usize, now: i64) -> Vec<UnhealthyRow> {
        let mut out = Vec::with_capacity(limit.min(256));
        for (_, key) in &self.ranking {
            if out.len() >= limit {
                break;
            }
            let Some(entry) = self.owner(key) else {
                continue;
            };
            for row in self.rows_of(key, entry, pool, now) {
                if out.len() >= limit {
                    break;
                }
                out.push(row);
            }
        }
        out
    }
}

/// Distinct (pool, limit) answers kept rendered at once.
const MAX_RENDERED: usize = 1024;

impl Handler<Unhealthy> for HealthCache {
    type Result = ApiResult<Bytes>;

    fn handle(&mut self, msg: Unhealthy, _: &mut Self::Context) -> Self::Result {
        if !self.ready {
            return Err(ApiError::DatabaseUnavailable);
        }
        let pool = match &msg.pool {
            None => None,
            Some(address) => match self.pool_ids.get(address) {
                Some(id) => Some(*id),
                None => return Ok(Bytes::from_static(br#"{"positions":[]}"#)),
            },
        };
        let now = Utc::now().timestamp();
        if self.rendered_at != (self.feed_version, now) || self.rendered.len() >= MAX_RENDERED {
            self.rendered.clear();
            self.rendered_at = (self.feed_version, now);
        }
        if let Some(body) = self.rendered.get(&(pool, msg.limit)) {
            return Ok(body.clone());
        }
        let rows = self.unhealthy_rows(pool, msg.limit, now);
        let body = Bytes::from(
            serde_json::to_vec(&serde_json::json!({ "positions": rows }))
                .map_err(|_| ApiError::Internal)?,
        );
        self.rendered.insert((pool, msg.limit), body.clone());
        Ok(body)
    }
}

/// The cached rows of one owner for GET /api/positions/{user}/detail, newest
/// sync first. `None` means the owner is not resident and must be loaded.
#[derive(Message)]
#[rtype(result = "ApiResult<Vec<DetailRow>>")]
pub struct Detail {
    pub owner: String,
}

impl HealthCache {
    fn detail_rows(&mut self, key: &Key) -> Vec<DetailRow> {
        let Some(id) = self.index.get(key).copied() else {
            return Vec::new();
        };
        // Touch the LRU (healthy owners only) so readers keep an owner resident.
        self.lru.get(&id);
        let entry = &self.owners[id as usize];
        let mut positions = entry.positions.clone();
        positions.sort_by(|a, b| {
            b.synced_us
                .cmp(&a.synced_us)
                .then(a.address.cmp(&b.address))
        });
        positions
            .iter()
            .filter_map(|p| {
                let pool = self.pools.get(&p.pool)?;
                Some(DetailRow {
                    pool_address: pool.address.clone(),
                    symbol: pool.symbol.clone().unwrap_or_default(),
                    deposit_shares: p.amounts.deposit_shares,
                    borrow_principal: p.amounts.borrow_principal,
                    deposit_tokens: crate::domain::wad::deposit_tokens(
                        p.amounts.deposit_shares,
                        pool.pricing.deposit_index_wad,
                    ),
                    borrow_debt: crate::domain::wad::borrow_debt(
                        p.amounts.borrow_principal,
                        pool.pricing.borrow_index_wad,
                        p.amounts.borrow_idx_snap,
                    ),
                    original_deposit: p.original_deposit,
                    supply_apy: pool.supply_apy,
                    borrow_apy: pool.borrow_apy,
                    health_factor_wad: entry.hf,
                })
            })
            .collect()
    }
}

impl Handler<Detail> for HealthCache {
    type Result = ResponseActFuture<Self, ApiResult<Vec<DetailRow>>>;

    fn handle(&mut self, msg: Detail, ctx: &mut Self::Context) -> Self::Result {
        if !self.ready {
            return Box::pin(fut::ready(Err(ApiError::DatabaseUnavailable)));
        }
        let Ok(key) = parse_key(&msg.owner) else {
            return Box::pin(fut::ready(Err(ApiError::Invalid)));
        };
        if self.owner(&key).is_some() || self.evictions == 0 {
            // Resident, or never evicted (so an absent owner has no positions).
            return Box::pin(fut::ready(Ok(self.detail_rows(&key))));
        }
        // Evicted: load the owner back through the pipeline, then answer.
        let (tx, rx) = oneshot::channel();
        self.enqueue(
            ctx,
            |p| {
                p.owners.insert(msg.owner);
            },
            Some(tx),
        );
        Box::pin(
            async move { rx.await.unwrap_or(Err(ApiError::Internal)) }
                .into_actor(self)
                .map(move |loaded, act, _| {
                    loaded?;
                    Ok(act.detail_rows(&key))
                }),
        )
    }
}

/// Subscribe to the liquidation feed. The receiver first gets a `candidate_start`
/// for every owner already unhealthy, then live events.
#[derive(Message)]
#[rtype(result = "ApiResult<mpsc::Receiver<Bytes>>")]
pub struct Subscribe;

impl Handler<Subscribe> for HealthCache {
    type Result = ApiResult<mpsc::Receiver<Bytes>>;

    fn handle(&mut self, _: Subscribe, _: &mut Self::Context) -> Self::Result {
        if !self.ready {
            return Err(ApiError::DatabaseUnavailable);
        }
        let (tx, rx) = mpsc::channel(SUBSCRIBER_BUFFER);
        let now = Utc::now().timestamp();
        for (hf, key) in &self.ranking {
            let Some(entry) = self.owner(key) else {
                continue;
            };
            let rows = self.rows_of(key, entry, None, now);
            let payload = serde_json::json!({
                "owner": Pubkey::new_from_array(*key).to_string(),
                "account_health_factor_wad": hf.to_string(),
                "positions": rows,
            });
            if tx
                .try_send(Bytes::from(format!(
                    "event: candidate_start\ndata: {payload}\n\n"
                )))
                .is_err()
            {
                break;
            }
        }
        self.subscribers.push(tx);
        Ok(rx)
    }
}

/// Counts for logs, health and benchmarks.
#[derive(Message)]
#[rtype(result = "CacheStats")]
pub struct Stats;

#[derive(Debug, Clone, Serialize)]
pub struct CacheStats {
    pub ready: bool,
    pub pools: usize,
    pub owners: usize,
    pub unhealthy_owners: usize,
    pub evictions: u64,
    pub subscribers: usize,
}

impl Handler<Stats> for HealthCache {
    type Result = MessageResult<Stats>;

    fn handle(&mut self, _: Stats, _: &mut Self::Context) -> Self::Result {
        MessageResult(CacheStats {
            ready: self.ready,
            pools: self.pools.len(),
            owners: self.index.len(),
            unhealthy_owners: self.ranking.len(),
            evictions: self.evictions,
            subscribers: self.subscribers.len(),
        })
    }
}

// ---- LISTEN ---------------------------------------------------------------------

#[derive(serde::Deserialize)]
struct Notice {
    cluster: String,
    owner: Option<String>,
    pool_address: Option<String>,
}

/// Holds a dedicated LISTEN connection forever, forwarding batches of changes to
/// the cache; on a lost connection, reconnects and asks for a full reload.
async fn listen_forever(url: String, cluster: &'static str, cache: Addr<HealthCache>) {
    let mut first = true;
    loop {
        match listen_once(&url, cluster, &cache, first).await {
            Ok(()) => tracing::warn!("LISTEN connection closed; reconnecting"),
            Err(e) => tracing::warn!(error = %e, "LISTEN connection failed; reconnecting"),
        }
        first = false;
        if !cache.connected() {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

async fn listen_once(
    url: &str,
    cluster: &str,
    cache: &Addr<HealthCache>,
    first: bool,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let pump = actix_rt::spawn(async move {
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
        .batch_execute("LISTEN lendex_positions; LISTEN lendex_pools")
        .await?;
    if !first {
        // Changes made while we were not listening are unknown: reload all.
        cache.do_send(Resync);
    }
    while let Some(first_notice) = rx.recv().await {
        // Gather whatever arrived with it, so a bulk change is one message.
        let mut owners = HashSet::new();
        let mut pools = HashSet::new();
        let mut take = |(channel, payload): (String, String)| {
            if let Ok(n) = serde_json::from_str::<Notice>(&payload) {
                if n.cluster != cluster {
                    return;
                }
                match channel.as_str() {
                    "lendex_positions" => owners.extend(n.owner),
                    "lendex_pools" => pools.extend(n.pool_address),
                    _ => {}
                }
            }
        };
        take(first_notice);
        tokio::time::sleep(Duration::from_millis(2)).await;
        while let Ok(next) = rx.try_recv() {
            take(next);
        }
        if !owners.is_empty() || !pools.is_empty() {
            cache.do_send(Changed {
                owners: owners.into_iter().collect(),
                pools: pools.into_iter().collect(),
            });
        }
    }
    pump.abort();
    drop(client);
    Ok(())
}
