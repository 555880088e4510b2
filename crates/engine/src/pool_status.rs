//! GET /api/pools/status, from the engine: each pool's token and
//! oracle as the health factors use them, with the one staleness rule
//! (`PoolEntry::oracle_stale`).

use super::Engine;
use super::oracle::OracleFeeds;
use super::state::PoolState;
use lendex_domain::pyth::{FeedStatus, deviation_bps};
use lendex_domain::rates::utilization_wad;
use lendex_wire::pools::{PoolFeed, PoolStatus, PoolStatusResponse};

/// Where the answer is served: the cluster and its explorer link's query.
pub struct Served<'a> {
    pub cluster: &'static str,
    pub explorer_query: &'a str,
}

/// Every pool, by symbol then address.
/// `feeds`: the feed view's readings, where feeds are read.
pub fn pool_status(
    engine: &Engine,
    feeds: Option<&OracleFeeds>,
    now: i64,
    max_oracle_age: i64,
    served: Served,
) -> PoolStatusResponse {
    let mut pools: Vec<PoolStatus> = engine
        .pools()
        .map(|p| (p, p.totals_value_wad()))
        .map(|(p, (deposits_value, borrows_value))| PoolStatus {
            pool_address: p.address_text.to_string(),
            symbol: p.state.symbol.clone(),
            decimals: p.state.pricing.decimals,
            oracle_price: p.state.pricing.oracle_price.map(|v| v.to_string()),
            oracle_expo: p.state.pricing.oracle_expo,
            oracle_updated_at: p.state.last_update_ts,
            oracle_age_seconds: now.saturating_sub(p.state.last_update_ts),
            oracle_stale: p.oracle_stale(now, max_oracle_age),
            slot: p.state.slot,
            oracle_conf: p.state.terms.oracle_conf.map(|c| c.to_string()),
            total_deposits: p.state.total_deposits.to_string(),
            total_borrows: p.state.total_borrows.to_string(),
            deposits_value_wad: deposits_value.to_string(),
            borrows_value_wad: borrows_value.to_string(),
            utilization_wad: utilization_wad(p.state.total_borrows, p.state.total_deposits)
                .to_string(),
            supply_apy: p.supply_apy,
            borrow_apy: p.borrow_apy,
            liquidation_threshold_wad: p.state.pricing.liquidation_threshold_wad.to_string(),
            feed: feeds.map(|f| pool_feed(f, &p.state, now)),
        })
        .collect();
    pools.sort_by(|a, b| (&a.symbol, &a.pool_address).cmp(&(&b.symbol, &b.pool_address)));
    PoolStatusResponse {
        max_oracle_age_seconds: max_oracle_age,
        cluster: served.cluster.into(),
        explorer_query: served.explorer_query.to_string(),
        pools,
    }
}

/// A pool's feed as pools status shows it (docs/design.md §17).
pub fn pool_feed(feeds: &OracleFeeds, copy: &PoolState, now: i64) -> PoolFeed {
    let named = feeds.feed_of(&copy.address);
    let reading = named.and_then(|(_, r)| r);
    let price = reading.and_then(|r| r.price);
    let status = match (named, reading) {
        (None, _) => FeedStatus::Unset,
        // Named, not read yet: no account known.
        (Some(_), None) => FeedStatus::Missing,
        (Some(_), Some(r)) => r.status,
    };
    let copy_price = copy.pricing.oracle_price.zip(copy.pricing.oracle_expo);
    PoolFeed {
        address: named.map(|(feed, _)| feed.to_string()),
        status: status.as_str().to_string(),
        price: price.map(|p| p.price.to_string()),
        conf: price.map(|p| p.conf.to_string()),
        exponent: price.map(|p| p.exponent),
        publish_time: price.map(|p| p.publish_time),
        age_seconds: price.map(|p| now.saturating_sub(p.publish_time)),
        posted_slot: price.map(|p| p.posted_slot),
        slot: reading.map(|r| r.slot),
        differs: feeds.crank(&copy.address),
        deviation_bps: price
            .zip(copy_price)
            .and_then(|(p, copy)| deviation_bps((p.price, p.exponent), copy)),
    }
}
