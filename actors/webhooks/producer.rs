//! The producer (docs/design.md §18): what every replica's judging of the
//! confirmed view's changes found, stored as deliveries by the leader. Every
//! replica judges every change and keeps its drafts until the stored cursor
//! passes them, so a replica that takes the lease over stores exactly what
//! the last leader had not (ids are derived; each is stored once). It also
//! reads the active webhooks every second for the judging (`filters`).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use deadpool_postgres::Pool;
use tokio::sync::watch;

use crate::domain::webhooks::judge::Filter;
use crate::leader_lease::LeaderChanged;
use lendex_store::webhooks::produce::{self, Draft};

/// How often drafts are stored while leading (a move reaches its receiver
/// within a second, §18's goal).
const STORE_EVERY: Duration = Duration::from_millis(50);
/// How often the webhooks are read again, and a follower reads the cursor.
const REFRESH_EVERY: Duration = Duration::from_secs(1);
/// Drafts kept at most while nobody stores them (a leader away, the
/// database down): the oldest go first.
const MAX_KEPT: usize = 100_000;

/// What judging one change found: its deliveries.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Judged {
    pub tick: u64,
    pub drafts: Vec<Draft>,
}

pub struct Producer {
    pool: Pool,
    cluster: &'static str,
    leader: bool,
    filters: watch::Sender<Arc<Vec<Filter>>>,
    /// Drafts not known stored, oldest change first.
    kept: VecDeque<Draft>,
    /// The newest change judged (the cursor a store moves to).
    judged_through: u64,
    storing: bool,
}

impl Producer {
    /// The producer, and the webhooks it keeps current for the judging.
    pub fn new(pool: Pool, cluster: &'static str) -> (Producer, watch::Receiver<Arc<Vec<Filter>>>) {
        let (filters, watching) = watch::channel(Arc::new(Vec::new()));
        let producer = Producer {
            pool,
            cluster,
            leader: false,
            filters,
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
        if !self.leader || self.storing || self.kept.is_empty() {
            return;
        }
        self.storing = true;
        let drafts: Vec<Draft> = self.kept.iter().cloned().collect();
        let through = self.judged_through;
        let (pool, cluster) = (self.pool.clone(), self.cluster);
        let stored = async move { produce::store(&pool, cluster, &drafts, through).await };
        ctx.spawn(stored.into_actor(self).map(|stored, act, _| {
            act.storing = false;
            match stored {
                Ok(through) => act.forget_through(through),
                // Kept as they are: the next store tries them again.
                Err(e) => tracing::warn!(error = %e, "webhook deliveries not stored"),
            }
        }));
    }

    fn forget_through(&mut self, through: u64) {
        while self.kept.front().is_some_and(|d| d.tick <= through) {
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
    }
}

impl Handler<Judged> for Producer {
    type Result = ();

    fn handle(&mut self, msg: Judged, _: &mut Self::Context) {
        self.judged_through = self.judged_through.max(msg.tick);
        self.kept.extend(msg.drafts);
        if self.kept.len() > MAX_KEPT {
            let over = self.kept.len() - MAX_KEPT;
            self.kept.drain(..over);
            tracing::warn!(
                dropped = over,
                "webhook deliveries dropped: none stored them"
            );
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
