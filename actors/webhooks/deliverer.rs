//! The deliverer (docs/design.md §18): on the leader alone (the ingester
//! lease), it sends each active webhook's first pending delivery when due,
//! one at a time per webhook and in order, and stores what came of it. A
//! slow receiver holds up its own webhook only: each attempt is a task of
//! its own, bounded by `webhooks.timeout_ms`. Everything it knows is in
//! PostgreSQL, so a replica that takes the lease over goes on where this one
//! stopped (a delivery cut mid-attempt is sent again with the same id).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use actix::prelude::*;
use chrono::Utc;
use deadpool_postgres::Pool;
use rand::Rng;

use super::attempt::{Answer, Request, attempt};
use crate::domain::webhooks::retry::{self, Next};
use crate::domain::webhooks::signature::Secret;
use crate::leader_lease::LeaderChanged;
use crate::metrics::webhooks as series;
use crate::settings::WebhooksConfig;
use lendex_store::webhooks::deliver::{self, Due, Outcome};

/// How often the queue is looked at while leading, besides the looks the
/// producer's stores and each finished attempt ask for (a retry comes due,
/// another replica's redelivery).
const LOOK_EVERY: Duration = Duration::from_millis(200);
/// Deliveries started per look at most.
const DUE_PER_LOOK: i64 = 256;

pub struct Deliverer {
    pool: Pool,
    cluster: &'static str,
    config: WebhooksConfig,
    leader: bool,
    /// A look at the queue is under way.
    looking: bool,
    /// Something may have become due while it was: look again after it.
    look_again: bool,
    /// Webhooks with an attempt under way: their next waits for it.
    in_flight: HashSet<String>,
    /// When each webhook's last attempt ended (its outcome stored).
    finished: HashMap<String, Instant>,
}

impl Deliverer {
    pub fn new(pool: Pool, cluster: &'static str, config: WebhooksConfig) -> Deliverer {
        Deliverer {
            pool,
            cluster,
            config,
            leader: false,
            looking: false,
            look_again: false,
            in_flight: HashSet::new(),
            finished: HashMap::new(),
        }
    }

    fn look(&mut self, ctx: &mut Context<Self>) {
        if self.looking {
            self.look_again = true;
            return;
        }
        if !self.leader {
            return;
        }
        self.looking = true;
        let began = Instant::now();
        let (pool, cluster) = (self.pool.clone(), self.cluster);
        let found = async move { deliver::due(&pool, cluster, DUE_PER_LOOK).await };
        ctx.spawn(found.into_actor(self).map(move |found, act, ctx| {
            act.looking = false;
            match found {
                Ok(due) => {
                    for delivery in due {
                        act.start(delivery, began, ctx);
                    }
                }
                Err(e) => tracing::warn!(error = %e, "webhook queue not read"),
            }
            if std::mem::take(&mut act.look_again) {
                act.look(ctx);
            }
        }));
    }

    /// Starts `due`, read by a look that began at `read_at`, unless its
    /// webhook has an attempt under way or finished one since (the row may
    /// be older than that attempt's outcome).
    fn start(&mut self, due: Due, read_at: Instant, ctx: &mut Context<Self>) {
        let stale = self
            .finished
            .get(&due.webhook_id)
            .is_some_and(|at| *at >= read_at);
        if !self.leader || stale || !self.in_flight.insert(due.webhook_id.clone()) {
            return;
        }
        let webhook = due.webhook_id.clone();
        let (pool, config) = (self.pool.clone(), self.config.clone());
        ctx.spawn(
            deliver_one(pool, config, due)
                .into_actor(self)
                .map(move |(), act, ctx| {
                    act.in_flight.remove(&webhook);
                    act.finished.insert(webhook, Instant::now());
                    // Its next delivery may be due at once.
                    act.look(ctx);
                }),
        );
    }
}

impl Actor for Deliverer {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(LOOK_EVERY, |act, ctx| act.look(ctx));
    }
}

/// Deliveries were stored (or one finished): look at the queue now rather
/// than at the next tick.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Wake;

impl Handler<Wake> for Deliverer {
    type Result = ();

    fn handle(&mut self, _: Wake, ctx: &mut Self::Context) {
        self.look(ctx);
    }
}

/// Whether this replica delivers now.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct IsDelivering;

impl Handler<IsDelivering> for Deliverer {
    type Result = bool;

    fn handle(&mut self, _: IsDelivering, _: &mut Self::Context) -> bool {
        self.leader
    }
}

impl Handler<LeaderChanged> for Deliverer {
    type Result = ();

    fn handle(&mut self, msg: LeaderChanged, ctx: &mut Self::Context) {
        self.leader = msg.0;
        if self.leader {
            self.look(ctx);
        }
    }
}

/// One attempt and its outcome stored. A database fault leaves the delivery
/// pending as it was: the next look tries it again.
async fn deliver_one(pool: Pool, config: WebhooksConfig, due: Due) {
    let Some(secret) = Secret::parse(&due.secret) else {
        tracing::error!(webhook = %due.webhook_id, "stored webhook secret unreadable");
        return;
    };
    let body = serde_json::json!({
        "webhook_id": due.webhook_id,
        "delivery_id": due.delivery_id,
        "change_id": due.change_id,
        "events": due.events,
    });
    let request = Request {
        url: &due.url,
        secret: &secret,
        delivery_id: &due.delivery_id,
        body: body.to_string().into_bytes(),
    };
    let began = Utc::now();
    let timeout = Duration::from_millis(config.timeout_ms);
    let answer = attempt(request, config.allow_private_targets, timeout).await;
    let outcome = outcome(&config, &due, began, answer);
    match deliver::record(&pool, &due.delivery_id, &outcome).await {
        Ok(committed) => {
            series::attempted(&outcome);
            if let Some(committed_at) = committed {
                let took = (Utc::now() - committed_at).to_std().unwrap_or_default();
                series::delivered_after(took);
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, delivery = %due.delivery_id, "webhook outcome not stored")
        }
    }
}

/// What an answer makes of the delivery: delivered, tried again within the
/// retry window, or (410, or the window over) failed with its webhook
/// disabled.
fn outcome(
    config: &WebhooksConfig,
    due: &Due,
    now: chrono::DateTime<Utc>,
    answer: Answer,
) -> Outcome {
    let (status, error) = match answer {
        Answer::Delivered(status) => return Outcome::Delivered(i32::from(status)),
        Answer::Gone => {
            return Outcome::Disable {
                status: Some(410),
                error: "answered 410 Gone".into(),
                reason: "the receiver answered 410 Gone".into(),
            };
        }
        Answer::Failed { status, error } => (status.map(i32::from), error),
    };
    let began = due.first_attempt_at.unwrap_or(now);
    let since_first = (now - began).to_std().unwrap_or_default();
    let attempt = u32::try_from(due.attempts).unwrap_or(0) + 1;
    let retry_for = Duration::from_secs(config.retry_seconds);
    match retry::next(attempt, since_first, retry_for, rand::thread_rng().r#gen()) {
        Next::RetryIn(wait) => Outcome::Retry {
            status,
            error,
            began,
            next: now + chrono::Duration::from_std(wait).unwrap_or_default(),
        },
        Next::GiveUp => Outcome::Disable {
            reason: format!(
                "delivery {} failed for {}s: {error}",
                due.delivery_id, config.retry_seconds
            ),
            status,
            error,
        },
    }
}
