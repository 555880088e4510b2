//! What the cache judges for webhooks (docs/design.md §18): after the
//! confirmed view (at the pool copy) applies a change, the owners it moved
//! are judged against every active webhook's line and filter, and the
//! crossings go to the producer (on a thread of its own), which makes them
//! that change's deliveries. Every replica judges, so the leader's
//! successor holds what the leader had not stored.
//! Owners' moves are kept by the engine only while a webhook is active.

use std::sync::Arc;

use actix::prelude::*;
use tokio::sync::watch;

use crate::domain::webhooks::change_id;
use crate::domain::webhooks::judge::{Crossed, Filter, Moved, crossings, net};
use crate::engine::Engine;
use crate::webhooks::producer::{Found, Judged};

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
        let mut found = Vec::new();
        for filter in filters.iter() {
            let holds = |owner: &_, pools: &std::collections::HashSet<_>| {
                engine.peek(owner).is_some_and(|v| {
                    v.positions
                        .iter()
                        .any(|(_, pool)| pools.contains(&pool.state.address))
                })
            };
            let crossed: Vec<(Crossed, u64)> = crossings(filter, tick, &moves, holds)
                .into_iter()
                .map(|c| (c, engine.peek(&c.owner).map_or(0, |v| v.slot())))
                .collect();
            if !crossed.is_empty() {
                found.push(Found {
                    webhook: filter.id.clone(),
                    below: filter.below,
                    crossed,
                });
            }
        }
        if !found.is_empty() {
            let change_id = change_id(epoch, tick);
            self.to.do_send(Judged {
                tick,
                change_id,
                found,
            });
        }
    }
}
