//! What the liquidators read, rendered from the engine: the unhealthy rows (spec
//! 2.4), the body of GET /api/positions/unhealthy, and the one SSE frame format.
//!
//! Answers are rendered once per feed change and kept in `Rendered`, shared with
//! every HTTP worker: a poller reads the bytes under a read lock, with no actor
//! round trip; only a miss goes to the actor.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use actix_web::web::Bytes;

use super::engine::Engine;
use super::frame::write_candidate;
use super::quotes::{QuoteFilter, at_risk_body, liquidations_body};
use super::view::OwnerView;
use crate::domain::pubkey::Pubkey;
use crate::wire::liquidations::LiquidationQuote;
use crate::wire::positions::{Candidate, UnhealthyResponse, UnhealthyRow};

/// One SSE frame: `event: <name>` and the candidate as JSON.
pub fn sse_frame(
    event: &str,
    owner: &Pubkey,
    hf: u128,
    rows: &[UnhealthyRow],
    liquidation: Option<&LiquidationQuote>,
) -> Bytes {
    let data = serde_json::to_string(&Candidate {
        owner: owner.to_string(),
        account_health_factor_wad: hf.to_string(),
        positions: rows,
        liquidation,
    })
    .expect("plain strings serialize");
    Bytes::from(format!("event: {event}\ndata: {data}\n\n"))
}

/// The frame of a candidate_start or candidate_update, from the wire types (the
/// reference `frame::write_candidate` is tested against).
#[cfg(test)]
pub fn candidate_frame(
    engine: &Engine,
    event: &str,
    owner: &Pubkey,
    now: i64,
    max_oracle_age: i64,
) -> Option<Bytes> {
    let view = engine.peek(owner)?;
    let rows = rows_of(&view, None, now, max_oracle_age);
    let quote = view
        .quote
        .map(|q| super::quotes::quote_wire(engine, &view, q, now, max_oracle_age));
    Some(sse_frame(
        event,
        owner,
        view.health_factor,
        &rows,
        quote.as_ref(),
    ))
}

/// An owner's unhealthy rows (or, with `debt_in_pool`, only its debt rows in that
/// pool): debt rows first, then by address, so pages are stable.
pub fn rows_of(
    view: &OwnerView<'_>,
    debt_in_pool: Option<&Pubkey>,
    now: i64,
    max_oracle_age: i64,
) -> Vec<UnhealthyRow> {
    let owner = view.owner.to_string();
    let hf = view.health_factor.to_string();
    let stale = view.positions.iter().any(|(_, pool)| {
        pool.state.pricing.oracle_price.is_some()
            && now - pool.state.last_update_ts > max_oracle_age
    });
    let mut rows: Vec<UnhealthyRow> = view
        .positions
        .iter()
        .filter(|(p, held_in)| {
            debt_in_pool
                .is_none_or(|pool| held_in.state.address == *pool && p.amounts.borrow_principal > 0)
        })
        .map(|(p, pool)| UnhealthyRow {
            position_address: p.address.to_string(),
            pool_address: pool.state.address.to_string(),
            owner: owner.clone(),
            deposit_shares: p.amounts.deposit_shares.to_string(),
            borrow_principal: p.amounts.borrow_principal.to_string(),
            health_factor_wad: hf.clone(),
            account_health_factor_wad: hf.clone(),
            oracle_stale: stale,
        })
        .collect();
    rows.sort_by(|a, b| {
        (a.borrow_principal == "0", &a.position_address)
            .cmp(&(b.borrow_principal == "0", &b.position_address))
    });
    rows
}

/// Owners below 1 WAD, most underwater first, until `limit` rows.
pub fn unhealthy_body(
    engine: &Engine,
    pool: Option<&Pubkey>,
    limit: usize,
    now: i64,
    max_oracle_age: i64,
) -> Bytes {
    let mut positions = Vec::with_capacity(limit.min(256));
    for (_, owner) in engine.unhealthy() {
        if positions.len() >= limit {
            break;
        }
        let Some(view) = engine.peek(&owner) else {
            continue;
        };
        let room = limit - positions.len();
        positions.extend(
            rows_of(&view, pool, now, max_oracle_age)
                .into_iter()
                .take(room),
        );
    }
    Bytes::from(
        serde_json::to_vec(&UnhealthyResponse { positions }).expect("plain strings serialize"),
    )
}

/// The frames a new subscriber gets first: a candidate_start for every owner
/// already under water, all of them, in one buffer.
pub fn snapshot_frames(engine: &Engine, now: i64, max_oracle_age: i64) -> Bytes {
    let mut out = Vec::new();
    for (_, owner) in engine.unhealthy() {
        write_candidate(
            &mut out,
            engine,
            "candidate_start",
            &owner,
            now,
            max_oracle_age,
        );
    }
    Bytes::from(out)
}

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
