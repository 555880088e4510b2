//! The unhealthy rows (docs/design.md §16.4) of GET /api/positions/unhealthy and
//! of the liquidation feed's events, from the engine (`feed::render` makes
//! their bytes).

use super::Engine;
use super::view::{OwnerView, crank_list};
use lendex_domain::pubkey::Pubkey;
use lendex_wire::positions::{UnhealthyResponse, UnhealthyRow};

/// An owner's unhealthy rows (or, with `debt_in_pool`, only its debt rows in that
/// pool): debt rows first, then by address, so pages are stable.
pub fn rows_of(
    view: &OwnerView<'_>,
    debt_in_pool: Option<&Pubkey>,
    crank: Option<&[String]>,
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
            crank: crank.map(<[String]>::to_vec),
        })
        .collect();
    rows.sort_by(|a, b| {
        (a.borrow_principal == "0", &a.position_address)
            .cmp(&(b.borrow_principal == "0", &b.position_address))
    });
    rows
}

/// Owners below 1 WAD, most underwater first, until `limit` rows.
pub fn unhealthy(
    engine: &Engine,
    pool: Option<&Pubkey>,
    limit: usize,
    now: i64,
    max_oracle_age: i64,
) -> UnhealthyResponse {
    let mut positions = Vec::with_capacity(limit.min(256));
    for (_, owner) in engine.unhealthy() {
        if positions.len() >= limit {
            break;
        }
        let Some(view) = engine.peek(&owner) else {
            continue;
        };
        let room = limit - positions.len();
        let crank = crank_list(engine, &view);
        positions.extend(
            rows_of(&view, pool, crank.as_deref(), now, max_oracle_age)
                .into_iter()
                .take(room),
        );
    }
    UnhealthyResponse { positions }
}
