//! The one place the engine's answers become bytes: the polled answers
//! (unhealthy, liquidations, at-risk), the pools' status, the risk lens, and
//! the feed's snapshot frames. The engine computes typed answers (wire
//! types); what is rendered here is kept, with its ETag, in `poll_answers`.

use bytes::Bytes;
use serde::Serialize;

use crate::frame::{Stamp, write_candidate};
use lendex_domain::pubkey::Pubkey;
use lendex_engine::Engine;
use lendex_engine::quotes::{QuoteFilter, at_risk, liquidations};
use lendex_engine::unhealthy::unhealthy;

/// Which polled answer: a feed and its query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Answer {
    /// GET /api/positions/unhealthy
    Unhealthy { pool: Option<Pubkey>, limit: usize },
    /// GET /api/liquidations
    Liquidations(QuoteFilter),
    /// GET /api/positions/at-risk
    AtRisk { below: u128, limit: usize },
}

/// A polled answer's body, from the engine.
pub fn answer(engine: &Engine, answer: &Answer, now: i64, max_oracle_age: i64) -> Bytes {
    match answer {
        Answer::Unhealthy { pool, limit } => json(&unhealthy(
            engine,
            pool.as_ref(),
            *limit,
            now,
            max_oracle_age,
        )),
        Answer::Liquidations(filter) => json(&liquidations(engine, filter, now, max_oracle_age)),
        Answer::AtRisk { below, limit } => json(&at_risk(engine, *below, *limit)),
    }
}

/// A body of plain strings and numbers, as JSON.
pub fn json(value: &impl Serialize) -> Bytes {
    Bytes::from(serde_json::to_vec(value).expect("plain strings and numbers serialize"))
}

/// The frames a new subscriber gets first: a candidate_start for every owner
/// already under water, all of them, in one buffer, each stamped with the id
/// of the last live event the engine's state includes.
pub fn snapshot_frames(engine: &Engine, stamp: Stamp, now: i64, max_oracle_age: i64) -> Bytes {
    let mut out = Vec::new();
    for (_, owner) in engine.unhealthy() {
        write_candidate(
            &mut out,
            engine,
            "candidate_start",
            &owner,
            stamp,
            now,
            max_oracle_age,
        );
    }
    Bytes::from(out)
}

/// The frame of a candidate_start or candidate_update, from the wire types (the
/// reference `frame::write_candidate` is tested against).
#[cfg(test)]
pub fn candidate_frame(
    engine: &Engine,
    event: &str,
    owner: &Pubkey,
    stamp: Stamp,
    now: i64,
    max_oracle_age: i64,
) -> Option<Bytes> {
    use crate::frame::sse_frame;
    use lendex_engine::quotes::quote_wire;
    use lendex_engine::unhealthy::rows_of;
    let view = engine.peek(owner)?;
    let crank = lendex_engine::view::crank_list(engine, &view);
    let rows = rows_of(&view, None, crank.as_deref(), now, max_oracle_age);
    let quote = view
        .quote
        .map(|q| quote_wire(engine, &view, q, now, max_oracle_age));
    Some(sse_frame(
        event,
        owner,
        view.health_factor,
        &rows,
        quote.as_ref(),
        crate::frame::Provenance {
            slot: view.slot(),
            view: engine.view_key(),
            crank: crank.as_deref(),
        },
        stamp,
    ))
}
