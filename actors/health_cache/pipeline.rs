//! How changes reach the engine. Every committed change of the index is in
//! the feed's change log (tables in sql/0011_feed_log.sql, triggers in sql/functions.sql) under its transaction's tick; the cache
//! reads the log after the last tick it applied and applies it tick after
//! tick, its own writes included, so every replica holds the same state after
//! the same tick and numbers the same events alike (docs/design.md §13). A full
//! reload reads everything with the clock in one snapshot and goes on from
//! its tick. Owners the engine evicted are read back as they are now.
//!
//! One read runs at a time: reads can complete out of order, and the next
//! must start from what the previous one applied.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use actix::prelude::*;

use super::actor::HealthCache;
use super::pending::{Need, Pending, Waiter};
use crate::db::engine_rows::{self as loader, IndexSnapshot};
use crate::db::error::DbResult;
use crate::db::feed_clock::Clock;
use crate::db::feed_log::{self, Read, Tick};
use crate::domain::pubkey::Pubkey;
use crate::engine::Change;
use crate::error::ActorError;
use crate::feed::poll_answers::OwnerBody;

const ALL_BODIES: [OwnerBody; 2] = [OwnerBody::Positions, OwnerBody::Detail];
/// Most position changes one read of the log applies; a bulk write past it
/// is taken by a full reload instead (its events are not numbered).
const MAX_LOG_ROWS: usize = 200_000;

/// The kinds of read, one at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Job {
    Reload,
    Log,
    Owners,
}

impl Job {
    /// A reload holds everything a log read or an owner read would have.
    fn satisfies(self, need: Need) -> bool {
        matches!(
            (self, need),
            (Job::Reload, _) | (Job::Log, Need::Log) | (Job::Owners, Need::Owners)
        )
    }
}

impl HealthCache {
    pub(super) fn enqueue(
        &mut self,
        ctx: &mut Context<Self>,
        edit: impl FnOnce(&mut Pending),
        waiter: Option<(Need, Waiter)>,
    ) {
        edit(&mut self.pending);
        if let Some((need, waiter)) = waiter {
            self.pending.waiters.push((need, self.reads, waiter));
        }
        self.pump(ctx);
    }

    /// Starts the next read, if none runs and one is due.
    pub(super) fn pump(&mut self, ctx: &mut Context<Self>) {
        if self.fetching {
            return;
        }
        let pending = &self.pending;
        let job = if pending.reload_all {
            Job::Reload
        } else if !self.ready {
            // Before the first load nothing can be applied (the load, always
            // asked for at start, reads it all).
            return;
        } else if self.holds_changes() {
            // History is about to record: every change waits to be judged.
            return;
        } else if !pending.owners.is_empty() || !pending.fallback_pools.is_empty() {
            Job::Owners
        } else if pending.read_log {
            Job::Log
        } else {
            return;
        };
        self.fetching = true;
        self.reads += 1;
        let number = self.reads;
        let (db, cluster) = (self.db.clone(), self.cluster);
        match job {
            Job::Reload => {
                self.pending.reload_all = false;
                self.pending.read_log = false;
                let read = async move { loader::load_snapshot(&db, cluster).await };
                ctx.spawn(read.into_actor(self).map(move |result, act, ctx| {
                    let result = result.map(|snapshot| act.apply_snapshot(snapshot));
                    if result.is_ok() {
                        act.on_ready(ctx);
                    }
                    act.finish(ctx, job, number, result.map(|()| true));
                }));
            }
            Job::Owners => {
                let owners: Vec<Pubkey> = self.pending.owners.drain().collect();
                let fallback: Vec<Pubkey> = self.pending.fallback_pools.drain().collect();
                let read =
                    async move { loader::load_owners(&db, cluster, &owners, &fallback).await };
                ctx.spawn(read.into_actor(self).map(move |result, act, ctx| {
                    let result = result.map(|owners| act.apply_read_back(owners));
                    act.finish(ctx, job, number, result.map(|()| true));
                }));
            }
            Job::Log => {
                self.pending.read_log = false;
                let heard = (
                    self.pending.notify_heard.take(),
                    self.pending.chain_heard.take(),
                );
                let after = self.applied;
                let started = Instant::now();
                let read =
                    async move { feed_log::read_after(&db, cluster, after, MAX_LOG_ROWS).await };
                ctx.spawn(read.into_actor(self).map(move |result, act, ctx| {
                    let fetched = started.elapsed();
                    let result = result.map(|read| match read {
                        Read::Ticks { clock, ticks } if clock.epoch == act.feed.epoch() => {
                            act.apply_log(clock, ticks, heard);
                            true
                        }
                        // Pruned past us, too much at once, or another database.
                        _ => {
                            act.pending.reload_all = true;
                            false
                        }
                    });
                    let applied = started.elapsed() - fetched;
                    crate::metrics::engine_applied(applied);
                    let ms = |d: Duration| d.as_secs_f64() * 1e3;
                    tracing::debug!(
                        fetch_ms = ms(fetched),
                        apply_ms = ms(applied),
                        "cache applied the change log"
                    );
                    act.finish(ctx, job, number, result);
                }));
            }
        }
    }

    /// Every tick read, one after the other: applied, then its events
    /// numbered and sent.
    fn apply_log(
        &mut self,
        clock: Clock,
        ticks: Vec<Tick>,
        (notify_heard, chain_heard): (Option<Instant>, Option<Instant>),
    ) {
        let mut published = false;
        for tick in ticks {
            self.apply_tick(tick.changes);
            published |= self.publish_tick(tick.tick);
        }
        self.applied = self.applied.max(clock.tick);
        self.feed.advance_to(self.applied);
        if published {
            if let Some(heard) = notify_heard {
                crate::metrics::feed_freshness_notify(heard.elapsed());
            }
            if let Some(heard) = chain_heard {
                crate::metrics::feed_freshness_chain(heard.elapsed());
            }
        }
        // After the feed: its subscribers wait on the publish, history does not.
        self.record_history();
        self.feed.announce_progress();
    }

    /// One tick's changes; what the engine cannot apply from memory (owners it
    /// evicted) is read back next.
    fn apply_tick(&mut self, changes: Vec<Change>) {
        if changes.iter().any(Change::is_pool_wide) {
            self.rendered
                .forget_owner_bodies(None::<std::iter::Empty<&Pubkey>>, &[]);
        } else {
            let owners: HashSet<Pubkey> = changes.iter().filter_map(Change::owner).collect();
            self.rendered
                .forget_owner_bodies(Some(owners.iter()), &ALL_BODIES);
        }
        let unapplied = self.engine.apply(changes);
        self.pending.owners.extend(unapplied.owners);
        self.pending.fallback_pools.extend(unapplied.pools);
    }

    fn apply_snapshot(&mut self, snapshot: IndexSnapshot) {
        self.rendered
            .forget_owner_bodies(None::<std::iter::Empty<&Pubkey>>, &[]);
        self.engine.clear();
        for pool in snapshot.pools {
            self.engine.upsert_pool(pool);
        }
        let owners = snapshot.owners.len();
        self.apply_owners(snapshot.owners);
        self.engine.end_reload();
        let reloaded = self.ready;
        self.ready = true;
        self.restart_feed(snapshot.clock.epoch, snapshot.clock.tick, reloaded);
        self.record_history();
        release_load_memory();
        tracing::info!(
            pools = self.engine.pool_count(),
            owners,
            unhealthy = self.engine.unhealthy_count(),
            tick = snapshot.clock.tick,
            "health-factor cache loaded"
        );
    }

    /// Evicted owners as read back now.
    fn apply_read_back(&mut self, owners: loader::Owners) {
        self.rendered
            .forget_owner_bodies(Some(owners.keys()), &ALL_BODIES);
        self.apply_owners(owners);
    }

    fn apply_owners(&mut self, owners: loader::Owners) {
        for (owner, (positions, stored)) in owners {
            self.engine.set_owner(owner, positions);
            if let Some(stored) = stored {
                self.engine.set_stored(&owner, stored);
            }
        }
    }

    /// After a read: answer the waiters it satisfies (once the health factors
    /// are committed, when one of them asked for that), then the next read.
    /// `answered`: false when the read gave way to a reload.
    fn finish(&mut self, ctx: &mut Context<Self>, job: Job, number: u64, result: DbResult<bool>) {
        self.fetching = false;
        let failed = result.is_err();
        if let Err(e) = &result {
            tracing::warn!(error = %e, "cache could not read rows; reloading everything");
            self.pending.reload_all = true;
        }
        if result.as_ref().is_ok_and(|answered| !answered) {
            self.pump(ctx);
            return;
        }
        let (done, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending.waiters)
            .into_iter()
            .partition(|(need, asked, _)| *asked < number && job.satisfies(*need));
        self.pending.waiters = waiting;
        let through = !done.is_empty() && std::mem::take(&mut self.pending.write_through);
        let waiters = done.into_iter().map(|(_, _, w)| w).collect();
        self.answer(
            ctx,
            waiters,
            result.map(|_| ()).map_err(ActorError::from),
            through,
        );
        self.unpark(job != Job::Owners, number);
        if failed {
            // The database is unreachable: try again shortly rather than spin.
            ctx.run_later(Duration::from_secs(1), |act, ctx| act.pump(ctx));
        } else {
            self.pump(ctx);
        }
    }
}

/// A cold load holds every row twice for a moment (as read, then as held);
/// give what it freed back to the system, so a million positions do not cost
/// their peak for the life of the process.
fn release_load_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}
