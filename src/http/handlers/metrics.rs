//! GET /metrics: the Prometheus text format (docs/design.md §9). Counters and
//! histograms are recorded where things happen (`crate::metrics`); the state
//! actors hold is read here, at scrape time, with the health check's deadline.

use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;

use super::health::CHECK_DEADLINE;
use crate::actors::chain_sync::GetSyncStatus;
use crate::actors::health_cache::Stats as CacheStatsRequest;
use crate::actors::history::GetHistoryStats;
use crate::error::{ApiError, ApiResult};
use crate::http::state::AppState;
use crate::metrics::{self, EngineGauges, HeldGauges, SyncGauges};
use crate::store::webhooks::deliver;

pub async fn metrics(req: HttpRequest, state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let loopback = req.peer_addr().is_some_and(|a| a.ip().is_loopback());
    if !loopback && !state.config.metrics.public {
        return Err(ApiError::NotFound);
    }
    let history = async {
        match &state.history {
            Some(writer) => tokio::time::timeout(CHECK_DEADLINE, writer.send(GetHistoryStats))
                .await
                .ok()
                .and_then(Result::ok),
            None => None,
        }
    };
    let backlog = deliver::backlog(state.store.pool(), state.cluster.as_str());
    let (sync, cache, lanes, history, backlog) = futures_util::join!(
        tokio::time::timeout(CHECK_DEADLINE, state.sync.send(GetSyncStatus)),
        tokio::time::timeout(CHECK_DEADLINE, state.cache.send(CacheStatsRequest)),
        tokio::time::timeout(CHECK_DEADLINE, state.writer.stats()),
        history,
        tokio::time::timeout(CHECK_DEADLINE, backlog),
    );
    let _one_at_a_time = metrics::SCRAPE.lock().await;
    if let Ok(Ok(s)) = sync {
        metrics::sync(&SyncGauges {
            leader: s.leader,
            fresh: s.is_fresh(Utc::now()),
            last_reconcile: s.last_complete.as_ref().map(|(at, r)| (*at, r.took)),
            lag_slots: s.lag_slots,
            connected: s.stream.connected,
            reconnects: s.stream.connections.saturating_sub(1),
            last_notification: s.stream.last_notification_at,
            processed_slot: s.stream.slots.processed,
            confirmed_slot: s.stream.slots.confirmed,
            slot_tree_problem: s.stream.slots.problem.is_some(),
        });
    }
    if let Ok(Ok(c)) = cache {
        metrics::engine(&EngineGauges {
            owners: c.owners,
            unhealthy: c.unhealthy_owners,
            watched: c.watched_owners,
            pools: c.pools,
            evictions: c.evictions,
            feed_version: c.feed_version,
            subscribers: c.subscribers,
            dropped_subscribers: c.dropped_subscribers,
        });
        if let Some(feeds) = &c.feeds {
            metrics::oracle(feeds);
        }
    }
    metrics::held(&HeldGauges {
        streams_open: state.streams.open(),
        streams_max: state.config.server.max_streams,
        long_polls_held: state.held_polls.held(),
        long_polls_max: state.config.server.max_held_polls,
        draining: state.drain.is_draining(),
    });
    if let Some(h) = history {
        metrics::history::state(
            h.queued,
            state.config.history.max_pending,
            h.partitions,
            h.leading,
        );
    }
    if let Ok(Ok(backlog)) = backlog {
        let age = backlog
            .oldest_committed_at
            .map_or(0.0, |at| (Utc::now() - at).as_seconds_f64().max(0.0));
        crate::actors::metrics::webhooks::oldest_pending(age);
    }
    for lane in lanes.unwrap_or_default() {
        metrics::writer_lane(
            lane.lane.name(),
            lane.queued,
            lane.failed_batches,
            lane.expired_writes,
        );
    }
    Ok(HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(state.metrics.render()))
}
