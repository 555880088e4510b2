//! GET /api/pools/status, rendered from the engine: each pool's token and
//! oracle as the health factors use them, with the one staleness rule
//! (`PoolEntry::oracle_stale`).

use bytes::Bytes;

use super::Engine;
use crate::wire::pools::{PoolStatus, PoolStatusResponse};

/// Every pool, by symbol then address.
pub fn pool_status_body(engine: &Engine, now: i64, max_oracle_age: i64) -> Bytes {
    let mut pools: Vec<PoolStatus> = engine
        .pools()
        .map(|p| PoolStatus {
            pool_address: p.address_text.to_string(),
            symbol: p.state.symbol.clone(),
            decimals: p.state.pricing.decimals,
            oracle_price: p.state.pricing.oracle_price.map(|v| v.to_string()),
            oracle_expo: p.state.pricing.oracle_expo,
            oracle_updated_at: p.state.last_update_ts,
            oracle_age_seconds: now.saturating_sub(p.state.last_update_ts),
            oracle_stale: p.oracle_stale(now, max_oracle_age),
            slot: p.state.slot,
        })
        .collect();
    pools.sort_by(|a, b| (&a.symbol, &a.pool_address).cmp(&(&b.symbol, &b.pool_address)));
    Bytes::from(
        serde_json::to_vec(&PoolStatusResponse {
            max_oracle_age_seconds: max_oracle_age,
            pools,
        })
        .expect("plain values serialize"),
    )
}
