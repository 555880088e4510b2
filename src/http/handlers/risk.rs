//! The risk lens (docs/design.md §10): what a price shock does to the book, and a
//! pool's liquidation curve, computed exactly from the health engine's memory.

use actix_web::{HttpResponse, web};

use crate::actors::health_cache::{Risk, RiskQuery};
use crate::domain::limits::clamp_limit;
use crate::domain::pubkey::{Pubkey, parse_pubkey};
use crate::domain::risk::{MAX_SHOCK_BPS, MIN_SHOCK_BPS};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::Params;
use crate::http::polls::json_bytes;
use crate::http::query::Query;
use crate::http::state::AppState;
use crate::wire::error::ErrorBody;
use crate::wire::formats::PubkeyText;
use crate::wire::risk::{CurveResponse, ShockResponse};

/// Pools one shock may move at once.
pub const MAX_SHOCKED_POOLS: usize = 16;
/// Points of a curve at most (steps + 1).
pub const MAX_CURVE_STEPS: u32 = 200;

#[utoipa::path(get, path = "/api/risk/shock", tag = "risk",
    params(("shock" = String, Query, pattern = r"^[1-9A-HJ-NP-Za-km-z]{32,44}:-?[0-9]{1,6}(,[1-9A-HJ-NP-Za-km-z]{32,44}:-?[0-9]{1,6}){0,15}$", description = "POOL:BPS[,POOL:BPS...]: up to 16 pools, each once, each moved by BPS basis points (-10000 to 100000); the shocked price is floor(price x (10000 + BPS) / 10000), and 0 or less leaves the pool unpriced"),
           ("limit" = Option<i64>, Query, description = "accounts listed: default 50, clamped to 200")),
    responses((status = 200, body = ShockResponse, description = "Every owner's health factor recomputed exactly at the shocked prices: the counts, the debt that becomes liquidatable, the bad debt, the profit on offer, and the newly liquidatable accounts with their quotes at those prices."),
        (status = 400, body = ErrorBody, description = "invalid (a malformed shock, a pool twice, more than 16 pools, a change out of range, or a pool with no oracle price)"),
        (status = 404, body = ErrorBody, description = "not found (a pool not in the index)"),
        (status = 503, body = ErrorBody, description = "database unavailable (cache not loaded yet)")))]
pub async fn shock(state: web::Data<AppState>, params: Params) -> ApiResult<HttpResponse> {
    let query = shock_query(params.query())?;
    let answered = state.cache.send(Risk(query)).await??;
    Ok(json_bytes(answered?))
}

#[utoipa::path(get, path = "/api/risk/curve", tag = "risk",
    params(("pool" = PubkeyText, Query, description = "the pool whose price moves"),
           ("from_bps" = Option<i64>, Query, minimum = -10000, maximum = 100000, description = "the first change, -10000 to 100000 (default -5000)"),
           ("to_bps" = Option<i64>, Query, minimum = -9999, maximum = 100000, description = "the last change, above from_bps, at most 100000 (default 0)"),
           ("steps" = Option<i64>, Query, minimum = 1, maximum = 200, description = "intervals between them, 1 to 200 (default 50): steps + 1 points")),
    responses((status = 200, body = CurveResponse, description = "The pool's liquidation curve: at each price point, how many of its owners are below 1 WAD, their debt and the bad debt."),
        (status = 400, body = ErrorBody, description = "invalid (pool missing or malformed, a bound or steps out of range, or a pool with no oracle price)"),
        (status = 404, body = ErrorBody, description = "not found (a pool not in the index)"),
        (status = 503, body = ErrorBody, description = "database unavailable (cache not loaded yet)")))]
pub async fn curve(state: web::Data<AppState>, params: Params) -> ApiResult<HttpResponse> {
    let query = curve_query(params.query())?;
    let answered = state.cache.send(Risk(query)).await??;
    Ok(json_bytes(answered?))
}

/// `shock` and `limit`: every malformed part is `invalid`.
pub fn shock_query(query: Query) -> ApiResult<RiskQuery> {
    let text = query.get("shock").ok_or(ApiError::Invalid)?;
    let mut shocks: Vec<(Pubkey, i64)> = Vec::new();
    for part in text.split(',') {
        let (pool, bps) = part.split_once(':').ok_or(ApiError::Invalid)?;
        let pool = parse_pubkey(pool).map_err(|_| ApiError::Invalid)?;
        let bps = bps_in(bps, MIN_SHOCK_BPS, MAX_SHOCK_BPS)?;
        if shocks.iter().any(|(p, _)| *p == pool) || shocks.len() == MAX_SHOCKED_POOLS {
            return Err(ApiError::Invalid);
        }
        shocks.push((pool, bps));
    }
    Ok(RiskQuery::Shock {
        shocks,
        limit: clamp_limit(query.get("limit").as_deref()) as usize,
    })
}

/// `pool`, `from_bps`, `to_bps` and `steps`: every malformed part is `invalid`.
pub fn curve_query(query: Query) -> ApiResult<RiskQuery> {
    let pool = query.key("pool")?.ok_or(ApiError::Invalid)?;
    let from_bps = match query.get("from_bps") {
        Some(v) => bps_in(&v, MIN_SHOCK_BPS, MAX_SHOCK_BPS)?,
        None => -5_000,
    };
    let to_bps = match query.get("to_bps") {
        Some(v) => bps_in(&v, MIN_SHOCK_BPS, MAX_SHOCK_BPS)?,
        None => 0,
    };
    let steps = match query.get("steps") {
        Some(v) => bps_in(&v, 1, i64::from(MAX_CURVE_STEPS))?,
        None => 50,
    };
    if from_bps >= to_bps {
        return Err(ApiError::Invalid);
    }
    Ok(RiskQuery::Curve {
        pool,
        from_bps,
        to_bps,
        steps: u32::try_from(steps).map_err(|_| ApiError::Invalid)?,
    })
}

/// A whole number written plainly (an optional minus, then digits) within
/// [min, max].
fn bps_in(text: &str, min: i64, max: i64) -> ApiResult<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || digits.len() > 7 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ApiError::Invalid);
    }
    text.parse::<i64>()
        .ok()
        .filter(|v| (min..=max).contains(v))
        .ok_or(ApiError::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "So11111111111111111111111111111111111111112";
    const B: &str = "11111111111111111111111111111111";

    fn shock(q: &str) -> ApiResult<RiskQuery> {
        shock_query(Query(q))
    }

    #[test]
    fn shocks_parse_or_are_invalid() {
        let ok = shock(&format!("shock={A}:-2500,{B}:100000&limit=3")).unwrap();
        let RiskQuery::Shock { shocks, limit } = ok else {
            panic!()
        };
        assert_eq!(limit, 3);
        assert_eq!(
            shocks,
            [(A.parse().unwrap(), -2_500), (B.parse().unwrap(), 100_000)]
        );
        let sixteen = (0..17)
            .map(|i| format!("{}:1", Pubkey::new_from_array([i; 32])))
            .collect::<Vec<_>>();
        for bad in [
            String::new(),
            "shock=".into(),
            format!("shock={A}"),
            format!("shock={A}:"),
            format!("shock={A}:1.5"),
            format!("shock={A}:+5"),
            format!("shock={A}:-10001"),
            format!("shock={A}:100001"),
            format!("shock={A}:1,{A}:2"),
            format!("shock={A}:1,"),
            "shock=nope:1".to_string(),
            format!("shock={}", sixteen.join(",")),
        ] {
            assert_eq!(shock(&bad).err(), Some(ApiError::Invalid), "{bad:?}");
        }
        assert!(shock(&format!("shock={}", sixteen[..16].join(","))).is_ok());
    }

    #[test]
    fn curves_parse_or_are_invalid() {
        let RiskQuery::Curve {
            from_bps,
            to_bps,
            steps,
            ..
        } = curve_query(Query(&format!("pool={A}"))).unwrap()
        else {
            panic!()
        };
        assert_eq!((from_bps, to_bps, steps), (-5_000, 0, 50), "the defaults");
        for bad in [
            String::new(),
            "pool=x".into(),
            format!("pool={A}&from_bps=0&to_bps=0"),
            format!("pool={A}&from_bps=10&to_bps=5"),
            format!("pool={A}&from_bps=-10001"),
            format!("pool={A}&to_bps=100001"),
            format!("pool={A}&steps=0"),
            format!("pool={A}&steps=201"),
            format!("pool={A}&steps=2.5"),
        ] {
            assert_eq!(
                curve_query(Query(&bad)).err(),
                Some(ApiError::Invalid),
                "{bad:?}"
            );
        }
    }
}
