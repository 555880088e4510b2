//! The unhealthy rows (docs/design.md §16.4): the body of GET /api/positions/unhealthy,
//! and the SSE frames of the liquidation feed, rendered from the engine.

use bytes::Bytes;

use super::Engine;
use super::frame::{Stamp, write_candidate};
use super::view::OwnerView;
use lendex_domain::pubkey::Pubkey;
use lendex_wire::positions::{UnhealthyResponse, UnhealthyRow};

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
    use super::frame::sse_frame;
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
        view.slot(),
        stamp,
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
    let stale = view
        .positions
        .iter()
        .any(|(_, pool)| pool.oracle_stale(now, max_oracle_age));
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
