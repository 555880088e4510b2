//! What the cache judges for webhooks (docs/design.md §18): after the
//! confirmed view (at the pool copy) applies a change, the owners it moved
//! are judged against every active webhook's line and filter, and the
//! crossings go to the producer as that change's deliveries. Every replica
//! judges, so the leader's successor holds what the leader had not stored.
//! Owners' moves are kept by the engine only while a webhook is active.

use std::sync::Arc;

use actix::prelude::*;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::domain::webhooks::judge::{Filter, Moved, crossings, net};
use crate::domain::webhooks::{MAX_EVENTS_PER_DELIVERY, change_id, delivery_id};
use crate::engine::Engine;
use crate::webhooks::producer::Judged;
use lendex_store::webhooks::produce::Draft;

pub struct WebhookLink {
    filters: watch::Receiver<Arc<Vec<Filter>>>,
    to: Recipient<Judged>,
    /// The engine keeps moves (some webhook is active).
    recording: bool,
}

impl WebhookLink {
    pub fn new(filters: watch::Receiver<Arc<Vec<Filter>>>, to: Recipient<Judged>) -> WebhookLink {
        WebhookLink {
            filters,
            to,
            recording: false,
        }
    }

    /// Before `engine` (the confirmed view's) applies a change: its moves
    /// are kept while some webhook is active.
    pub(super) fn prepare(&mut self, engine: &mut Engine) {
        let wanted = !self.filters.borrow().is_empty();
        if wanted != self.recording {
            engine.record_moves(wanted);
            self.recording = wanted;
        }
    }

    /// After `engine` applied change `tick` of the log of `epoch`.
    pub(super) fn judge(&mut self, engine: &mut Engine, epoch: u64, tick: u64) {
        let filters = self.filters.borrow().clone();
        if !self.recording || filters.is_empty() {
            return;
        }
        let moves = net(engine.take_moves().into_iter().map(|m| Moved {
            owner: m.owner,
            before: m.before,
            after: m.after,
        }));
        if moves.is_empty() {
            return;
        }
        let change = change_id(epoch, tick);
        let mut drafts = Vec::new();
        for filter in filters.iter() {
            let holds = |owner: &_, pools: &std::collections::HashSet<_>| {
                engine.peek(owner).is_some_and(|v| {
                    v.positions
                        .iter()
                        .any(|(_, pool)| pools.contains(&pool.state.address))
                })
            };
            let crossed = crossings(filter, tick, &moves, holds);
            let events: Vec<Value> = crossed
                .iter()
                .map(|c| {
                    json!({
                        "type": c.kind.as_str(),
                        "owner": c.owner.to_string(),
                        "account_health_factor_wad": c.health_factor.to_string(),
                        "below_wad": filter.below.to_string(),
                        "slot": engine.peek(&c.owner).map_or(0, |v| v.slot()),
                        "change_id": change,
                    })
                })
                .collect();
            for (part, chunk) in events.chunks(MAX_EVENTS_PER_DELIVERY).enumerate() {
                drafts.push(Draft {
                    tick,
                    delivery_id: delivery_id(&filter.id, &change, part as u32),
                    webhook_id: filter.id.clone(),
                    change_id: change.clone(),
                    events: Value::Array(chunk.to_vec()),
                });
            }
        }
        if !drafts.is_empty() {
            self.to.do_send(Judged { tick, drafts });
        }
    }
}
