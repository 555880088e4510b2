//! The producer (docs/design.md §18): what every replica's judging of the
//! confirmed view's changes found, made deliveries and stored by the leader.
//! Every replica judges every change and keeps what it found until the
//! stored cursor passes it, so a replica that takes the lease over stores
//! exactly what the last leader had not (ids are derived; each is stored
//! once). It also reads the active webhooks every second for the judging
//! (`filters`). It runs on the webhooks' own thread: the deliveries' JSON
//! and their storing never hold up the cache or the feed, and a change is
//! stored once the feed's burst for it is out (`QUIET_FOR`).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use deadpool_postgres::Pool;
use tokio::sync::watch;

use serde_json::{Value, json};

use super::deliverer::Wake;
use crate::domain::webhooks::judge::{Crossed, Filter};
use crate::domain::webhooks::{MAX_EVENTS_PER_DELIVERY, delivery_id};
use crate::leader_lease::LeaderChanged;
use lendex_store::webhooks::produce::{self, Draft};

/// How often what was found is stored while leading (a move reaches its
/// receiver within a second, §18's goal).
const STORE_EVERY: Duration = Duration::from_millis(25);
/// A change found this recently is still being published on the feed: it
/// waits, unless something has waited `WAIT_AT_MOST`.
const QUIET_FOR: Duration = Duration::from_millis(40);
const WAIT_AT_MOST: Duration = Duration::from_millis(200);
/// How often the webhooks are read again, and a follower reads the cursor.
const REFRESH_EVERY: Duration = Duration::from_secs(1);
/// Changes kept at most while nobody stores them (a leader away, the
/// database down): the oldest go first.
const MAX_KEPT: usize = 10_000;

/// What judging one change found: each webhook's crossings, with the slot
/// of the owner's values.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Judged {
    pub tick: u64,
    /// `<epoch>.<tick>`.
    pub change_id: String,
    pub found: Vec<Found>,
}

/// One webhook's crossings in one change, sorted by owner.
pub struct Found {
    pub webhook: String,
    pub below: u128,
    pub crossed: Vec<(Crossed, u64)>,
}

/// A change's deliveries: for each webhook, its events in parts of at most
/// 1,000, each with its derived id.
pub fn drafts_of(judged: &Judged) -> Vec<Draft> {
    let mut drafts = Vec::new();
    for found in &judged.found {
        let events: Vec<Value> = found
            .crossed
            .iter()
            .map(|(c, slot)| {
                json!({
                    "type": c.kind.as_str(),
                    "owner": c.owner.to_string(),
                    "account_health_factor_wad": c.health_factor.to_string(),
                    "below_wad": found.below.to_string(),
                    "slot": slot,
                    "change_id": judged.change_id,
                })
            })
            .collect();
        for (part, chunk) in events.chunks(MAX_EVENTS_PER_DELIVERY).enumerate() {
            drafts.push(Draft {
                tick: judged.tick,
                delivery_id: delivery_id(&found.webhook, &judged.change_id, part as u32),
                webhook_id: found.webhook.clone(),
                change_id: judged.change_id.clone(),
                events: Value::Array(chunk.to_vec()),
            });
        }
    }
    drafts
}

pub struct Producer {
    pool: Pool,
    cluster: &'static str,
    leader: bool,
    filters: watch::Sender<Arc<Vec<Filter>>>,
    /// Told when deliveries are stored.
    deliverer: Recipient<Wake>,
    /// What was found and is not known stored, oldest change first, with
    /// when it arrived.
    kept: VecDeque<(Instant, Judged)>,
    /// The newest change judged (the cursor a store moves to).
    judged_through: u64,
    storing: bool,
}

impl Producer {
    /// The producer, and the webhooks it keeps current for the judging.
    pub fn new(
        pool: Pool,
        cluster: &'static str,
        deliverer: Recipient<Wake>,
    ) -> (Producer, watch::Receiver<Arc<Vec<Filter>>>) {
        let (filters, watching) = watch::channel(Arc::new(Vec::new()));
        let producer = Producer {
            pool,
            cluster,
            leader: false,
            filters,
            deliverer,
            kept: VecDeque::new(),
            judged_through: 0,
            storing: false,
        };
        (producer, watching)
    }

    fn refresh(&mut self, ctx: &mut Context<Self>) {
        let (pool, cluster, leader) = (self.pool.clone(), self.cluster, self.leader);
        let read = async move {
            let filters = produce::filters(&pool, cluster).await;
            let cursor = match leader {
                true => None,
                false => produce::cursor(&pool, cluster).await.ok(),
            };
            (filters, cursor)
        };
        ctx.spawn(read.into_actor(self).map(|(filters, cursor), act, _| {
            match filters {
                Ok(filters) => {
                    if **act.filters.borrow() != filters {
                        act.filters.send_replace(Arc::new(filters));
                    }
                }
                Err(e) => tracing::warn!(error = %e, "webhooks not read"),
            }
            if let Some(through) = cursor {
                act.forget_through(through);
            }
        }));
    }

    fn store(&mut self, ctx: &mut Context<Self>) {
        if !self.leader || self.storing {
            return;
        }
        let (Some((oldest, _)), Some((newest, _))) = (self.kept.front(), self.kept.back()) else {
            return;
        };
        if newest.elapsed() < QUIET_FOR && oldest.elapsed() < WAIT_AT_MOST {
            return;
        }
        self.storing = true;
        let drafts: Vec<Draft> = self.kept.iter().flat_map(|(_, j)| drafts_of(j)).collect();
        let through = self.judged_through;
        let (pool, cluster) = (self.pool.clone(), self.cluster);
        let stored = async move { produce::store(&pool, cluster, &drafts, through).await };
        ctx.spawn(stored.into_actor(self).map(|stored, act, _| {
            act.storing = false;
            match stored {
                Ok(through) => {
                    act.forget_through(through);
                    act.deliverer.do_send(Wake);
                }
                // Kept as they are: the next store tries them again.
                Err(e) => tracing::warn!(error = %e, "webhook deliveries not stored"),
            }
        }));
    }

    fn forget_through(&mut self, through: u64) {
        while self.kept.front().is_some_and(|(_, j)| j.tick <= through) {
            self.kept.pop_front();
        }
    }
}

impl Actor for Producer {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.refresh(ctx);
        ctx.run_interval(REFRESH_EVERY, |act, ctx| act.refresh(ctx));
        ctx.run_interval(STORE_EVERY, |act, ctx| act.store(ctx));
        // The cache holds the only reader of the filters: once it is gone
        // (the service stopped) nothing judges any more, and the webhooks'
        // thread ends with the deliverer on it, rather than outlive the
        // service polling a database it no longer serves.
        let filters = self.filters.clone();
        let gone = async move { filters.closed().await };
        ctx.spawn(gone.into_actor(self).map(|(), _, ctx| {
            ctx.stop();
            Arbiter::current().stop();
        }));
    }
}

impl Handler<Judged> for Producer {
    type Result = ();

    fn handle(&mut self, msg: Judged, _: &mut Self::Context) {
        self.judged_through = self.judged_through.max(msg.tick);
        self.kept.push_back((Instant::now(), msg));
        if self.kept.len() > MAX_KEPT {
            let over = self.kept.len() - MAX_KEPT;
            self.kept.drain(..over);
            tracing::warn!(dropped = over, "webhook changes dropped: none stored them");
        }
    }
}

impl Handler<LeaderChanged> for Producer {
    type Result = ();

    fn handle(&mut self, msg: LeaderChanged, ctx: &mut Self::Context) {
        self.leader = msg.0;
        self.store(ctx);
    }
}
