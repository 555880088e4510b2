//! The polled answers (unhealthy, liquidations, at-risk), rendered from the
//! engine, and the per-owner bodies (positions, detail) made from it.
//!
//! Answers are rendered once per feed change and kept in `Rendered`, shared with
//! every HTTP worker: a poller reads the bytes under a read lock, with no actor
//! round trip; only a miss goes to the actor.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use bytes::Bytes;

use super::Engine;
use super::quotes::{QuoteFilter, at_risk_body, liquidations_body};
use super::unhealthy::unhealthy_body;
use crate::domain::pubkey::Pubkey;

/// Distinct answers kept rendered at once.
const MAX_RENDERED: usize = 1024;

/// Which rendered answer: a feed and its query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Answer {
    /// GET /api/positions/unhealthy
    Unhealthy { pool: Option<Pubkey>, limit: usize },
    /// GET /api/liquidations
    Liquidations(QuoteFilter),
    /// GET /api/positions/at-risk
    AtRisk { below: u128, limit: usize },
}

/// Renders an answer from the engine.
pub fn render(engine: &Engine, answer: &Answer, now: i64, max_oracle_age: i64) -> Bytes {
    match answer {
        Answer::Unhealthy { pool, limit } => {
            unhealthy_body(engine, pool.as_ref(), *limit, now, max_oracle_age)
        }
        Answer::Liquidations(filter) => liquidations_body(engine, filter, now, max_oracle_age),
        Answer::AtRisk { below, limit } => at_risk_body(engine, *below, *limit),
    }
}

/// Rendered answers, valid for one feed version and one wall-clock second
/// (oracle staleness moves with time). The actor clears it on every change;
/// readers check the second.
#[derive(Default)]
pub struct Rendered {
    second: i64,
    bodies: HashMap<Answer, Bytes, foldhash::fast::RandomState>,
    /// Per-owner answers (GET /api/positions/{user} and /detail). They do not
    /// move with time, only with the owner's rows, its pools or its borrows.
    owner_bodies: HashMap<(Pubkey, OwnerBody), Bytes, foldhash::fast::RandomState>,
    /// Bumped by every forgetting of owner bodies: a body made from data read
    /// before that is not kept.
    owner_generation: u64,
}

/// Which per-owner answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OwnerBody {
    Positions,
    Detail,
}

/// Per-owner answers kept at once (about 1.5 KB each); past it they start over.
const MAX_OWNER_BODIES: usize = 10_000;

/// Shared between the actor (the only writer) and the HTTP workers.
pub type SharedRendered = Arc<RwLock<Rendered>>;

/// The Unix second answers are rendered and kept for (and oracle ages
/// measured at). Read per request: no calendar arithmetic.
pub fn now_seconds() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A rendered answer for this second, if one is there.
pub fn cached_answer(shared: &SharedRendered, answer: &Answer, now: i64) -> Option<Bytes> {
    let rendered = shared.read().unwrap_or_else(|e| e.into_inner());
    if rendered.second != now {
        return None;
    }
    rendered.bodies.get(answer).cloned()
}

/// Keeps an answer for other readers of the same second and version.
pub fn keep_answer(shared: &SharedRendered, answer: Answer, now: i64, body: Bytes) {
    let mut rendered = shared.write().unwrap_or_else(|e| e.into_inner());
    if rendered.second != now || rendered.bodies.len() >= MAX_RENDERED {
        rendered.bodies.clear();
        rendered.second = now;
    }
    rendered.bodies.insert(answer, body);
}

/// Drops every rendered answer (the feed changed).
pub fn forget_answers(shared: &SharedRendered) {
    let mut rendered = shared.write().unwrap_or_else(|e| e.into_inner());
    rendered.bodies.clear();
}

/// A rendered per-owner answer, if one is there.
pub fn cached_owner_body(
    shared: &SharedRendered,
    owner: &Pubkey,
    kind: OwnerBody,
) -> Option<Bytes> {
    let rendered = shared.read().unwrap_or_else(|e| e.into_inner());
    rendered.owner_bodies.get(&(*owner, kind)).cloned()
}

/// The generation to quote when handing out data a body will be made from.
pub fn owner_generation(shared: &SharedRendered) -> u64 {
    shared
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .owner_generation
}

/// Keeps a per-owner answer made from data read at `generation`, unless owner
/// bodies were forgotten since (the data may be stale).
pub fn keep_owner_body(
    shared: &SharedRendered,
    owner: Pubkey,
    kind: OwnerBody,
    generation: u64,
    body: Bytes,
) {
    let mut rendered = shared.write().unwrap_or_else(|e| e.into_inner());
    if rendered.owner_generation != generation {
        return;
    }
    if rendered.owner_bodies.len() >= MAX_OWNER_BODIES {
        rendered.owner_bodies.clear();
    }
    rendered.owner_bodies.insert((owner, kind), body);
}

/// Forgets the given owners' answers (of `kinds`), or with `None` every owner's.
pub fn forget_owner_bodies<'a>(
    shared: &SharedRendered,
    owners: Option<impl Iterator<Item = &'a Pubkey>>,
    kinds: &[OwnerBody],
) {
    let mut rendered = shared.write().unwrap_or_else(|e| e.into_inner());
    rendered.owner_generation += 1;
    match owners {
        None => rendered.owner_bodies.clear(),
        Some(owners) => {
            if rendered.owner_bodies.is_empty() {
                return;
            }
            for owner in owners {
                for kind in kinds {
                    rendered.owner_bodies.remove(&(*owner, *kind));
                }
            }
        }
    }
}
