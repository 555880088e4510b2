//! How changes reach the engine. Every committed change of the index is in
//! the change log (tables in sql/0011_feed_log.sql, triggers in sql/functions.sql) under its transaction's tick; the cache
//! reads the log after the last tick it applied and applies it tick after
//! tick, its own writes included, so every replica holds the same state after
//! the same tick and numbers the same events alike (docs/design.md §13). A full
//! reload reads everything with the clock in one snapshot and goes on from
//! its tick. Owners the engine evicted are read back as they are now.
//!
//! Which read runs next, and whom it answers, is the read queue's
//! (`read_queue.rs`); this file runs the reads and applies what they bring.

use std::time::{Duration, Instant};

use actix::prelude::*;

use super::actor::HealthCache;
use super::read_queue::{Ended, Job, Kind, Need, Waiter, Wants};
use crate::engine::Unapplied;
use crate::error::ActorError;
use lendex_store::change_clock::Clock;
use lendex_store::change_log::{self, Read, Tick};
use lendex_store::engine_rows::{self as loader, IndexSnapshot};
use lendex_store::error::DbResult;

/// Most position changes one read of the log applies; a bulk write past it
/// is taken by a full reload instead (its events are not numbered).
const MAX_LOG_ROWS: usize = 200_000;

impl HealthCache {
    pub(super) fn enqueue(
        &mut self,
        ctx: &mut Context<Self>,
        edit: impl FnOnce(&mut Wants),
        waiter: Option<(Need, Waiter)>,
    ) {
        self.reads.ask(edit, waiter);
        self.pump(ctx);
    }

    /// Starts the next read, if none runs and one is due.
    pub(super) fn pump(&mut self, ctx: &mut Context<Self>) {
        let held = self.holds_changes();
        let Some((job, number)) = self.reads.next(self.views.is_loaded(), held) else {
            return;
        };
        let (db, cluster) = self.source();
        let kind = job.kind();
        match job {
            Job::Reload => {
                let overlay = self.views.serves_processed();
                let read = async move { loader::load_snapshot(&db, cluster, overlay).await };
                ctx.spawn(read.into_actor(self).map(move |result, act, ctx| {
                    let result = result.map(|snapshot| act.apply_snapshot(snapshot));
                    if result.is_ok() {
                        act.on_ready(ctx);
                    }
                    act.finish(ctx, kind, number, result.map(|()| true));
                }));
            }
            Job::Owners {
                owners,
                fallback_pools,
            } => {
                let read = async move {
                    loader::load_owners(&db, cluster, &owners, &fallback_pools).await
                };
                ctx.spawn(read.into_actor(self).map(move |result, act, ctx| {
                    let result = result.map(|owners| act.apply_read_back(owners));
                    act.finish(ctx, kind, number, result.map(|()| true));
                }));
            }
            Job::Log {
                notify_heard,
                chain_heard,
            } => {
                let heard = (notify_heard, chain_heard);
                let (after, overlay) = (self.views.applied(), self.views.serves_processed());
                let started = Instant::now();
                let read = async move {
                    change_log::read_after(&db, cluster, after, MAX_LOG_ROWS, overlay).await
                };
                ctx.spawn(read.into_actor(self).map(move |result, act, ctx| {
                    let fetched = started.elapsed();
                    let result = result.map(|read| match read {
                        Read::Ticks { clock, ticks }
                            if clock.epoch == act.views.confirmed().streams().epoch() =>
                        {
                            act.apply_log(clock, ticks, heard);
                            true
                        }
                        // Pruned past us, too much at once, or another database:
                        // a reload takes over.
                        _ => false,
                    });
                    let applied = started.elapsed() - fetched;
                    crate::metrics::engine_applied(applied);
                    let ms = |d: Duration| d.as_secs_f64() * 1e3;
                    tracing::debug!(
                        fetch_ms = ms(fetched),
                        apply_ms = ms(applied),
                        "cache applied the change log"
                    );
                    act.finish(ctx, kind, number, result);
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
        let mut published = None;
        let nothing_new = ticks.is_empty();
        for tick in ticks {
            let number = tick.tick;
            if let Some(webhooks) = &mut self.webhooks {
                webhooks.prepare(self.views.confirmed_engine_mut());
            }
            // Each view's events to its feed, the confirmed one's first.
            let (unapplied, at) = self.views.apply_tick(tick);
            if let Some(webhooks) = &mut self.webhooks {
                webhooks.judge(self.views.confirmed_engine_mut(), clock.epoch, number);
            }
            self.read_back(unapplied);
            published = at.or(published);
        }
        self.views.advance_to(clock.tick);
        for view in self.views.iter_mut() {
            view.streams_mut().announce_progress();
        }
        // A change heard while an earlier read was already applying it was
        // published by that read: it is timed to that publish (a read that
        // finds nothing new is the sign), not dropped.
        let frames_at = match (published, nothing_new) {
            (Some(at), _) => Some(at),
            (None, true) => self.last_publish,
            (None, false) => None,
        };
        if let Some(at) = frames_at {
            let took = |heard: Option<Instant>| heard.and_then(|h| at.checked_duration_since(h));
            if let Some(took) = took(notify_heard) {
                crate::metrics::feed_freshness_notify(took);
            }
            if let Some(took) = took(chain_heard) {
                crate::metrics::feed_freshness_chain(took);
            }
        }
        if published.is_some() {
            self.last_publish = frames_at;
        }
        // After the feed: its subscribers wait on the publish, history does not.
        self.record_history();
    }

    /// Owners an engine could not answer for (evicted, or unknown to the
    /// processed view) are read from the database next.
    fn read_back(&mut self, Unapplied { owners, pools }: Unapplied) {
        if !owners.is_empty() || !pools.is_empty() {
            self.reads.read_back(owners, pools);
        }
    }

    fn apply_snapshot(&mut self, snapshot: IndexSnapshot) {
        let reloaded = self.views.is_loaded();
        let owners = snapshot.owners.len();
        if let Some(webhooks) = &mut self.webhooks {
            webhooks.prepare(self.views.confirmed_engine_mut());
        }
        self.views.load(
            &snapshot.pools,
            &snapshot.feeds,
            snapshot.owners,
            snapshot.overlay,
        );
        let clock = snapshot.clock;
        self.views.restart(clock.epoch, clock.tick, reloaded);
        // A reload (after a failed read, or a log too long to read) may
        // hold changes no tick brought: webhooks judge it as one change.
        if let Some(webhooks) = &mut self.webhooks {
            let engine = self.views.confirmed_engine_mut();
            match reloaded {
                true => webhooks.judge(engine, clock.epoch, clock.tick),
                false => drop(engine.take_moves()),
            }
        }
        self.record_history();
        release_load_memory();
        let engine = self.engine();
        tracing::info!(
            pools = engine.pool_count(),
            owners,
            unhealthy = engine.unhealthy_count(),
            tick = snapshot.clock.tick,
            "health-factor cache loaded"
        );
    }

    /// Evicted owners as read back now.
    fn apply_read_back(&mut self, owners: loader::Owners) {
        self.views.read_back(owners);
    }

    /// After a read: answer the waiters it satisfies (once the health factors
    /// are committed, when one of them asked for that), then the next read.
    /// `Ok(false)`: the read gave way to a reload.
    fn finish(&mut self, ctx: &mut Context<Self>, kind: Kind, number: u64, result: DbResult<bool>) {
        let ended = match &result {
            Ok(true) => Ended::Done,
            Ok(false) => Ended::GaveWay,
            Err(e) => {
                tracing::warn!(error = %e, "cache could not read rows; reloading everything");
                Ended::Failed
            }
        };
        let answered = self.reads.finish(kind, number, ended);
        if ended == Ended::GaveWay {
            self.pump(ctx);
            return;
        }
        self.answer(
            ctx,
            answered.waiters,
            result.map(|_| ()).map_err(ActorError::from),
            answered.write_through,
        );
        self.views.unpark(kind != Kind::Owners, number);
        if ended == Ended::Failed {
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
