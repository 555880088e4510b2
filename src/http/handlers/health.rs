//! GET /api/health: liveness with the state of each backend (docs/design.md §4.16). HTTP
//! 200, answered within 3 s whatever the database or the RPC do; a failing
//! check turns status to "degraded". A replica draining before a stop answers
//! 503 "draining", the one answer every load balancer's check understands.

use std::time::{Duration, Instant};

use actix_web::{HttpResponse, web};
use chrono::{SecondsFormat, Utc};

use crate::actors::chain_reader::GetSlot;
use crate::actors::chain_sync::GetSyncStatus;
use crate::actors::health_cache::Stats as CacheStatsRequest;
use crate::actors::history::GetHistoryStats;
use crate::actors::webhooks::deliverer::IsDelivering;
use crate::error::ApiResult;
use crate::http::state::AppState;
use crate::store::reads::health;
use crate::store::webhooks::deliver;
use crate::store::writes::Lane;
use crate::wire::health::*;

/// Each check gets this long, and they run concurrently, so the answer comes within 3 s.
pub(super) const CHECK_DEADLINE: Duration = Duration::from_millis(2500);

#[utoipa::path(get, path = "/api/health", tag = "health",
    responses((status = 200, body = HealthResponse, description = "status of the service and of each dependency"),
        (status = 503, body = HealthResponse, description = "draining: this replica is stopping (docs/design.md §13); a load balancer takes it out of rotation")))]
pub async fn health(state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let (db, rpc, sync, cache, lanes, history, webhooks) = futures_util::join!(
        database_check(&state),
        rpc_check(&state),
        sync_check(&state),
        cache_check(&state),
        tokio::time::timeout(CHECK_DEADLINE, state.writer.stats()),
        history_check(&state),
        webhooks_check(&state),
    );
    let writer = WriterCheck {
        lanes: lanes
            .unwrap_or_default()
            .into_iter()
            .map(|l| LaneCheck {
                lane: match l.lane {
                    Lane::Index => LaneName::Index,
                    Lane::Admin => LaneName::Admin,
                    Lane::TxLog => LaneName::TxLog,
                    Lane::Auth => LaneName::Auth,
                },
                queued: l.queued,
                batches: l.batches,
                writes: l.writes,
                largest_batch: l.largest_batch,
                failed_batches: l.failed_batches,
                expired_writes: l.expired_writes,
                last_batch_ms: l.last_batch_ms,
            })
            .collect(),
    };
    let (database, counts) = db;
    let ok = database.ok && rpc.ok && sync.ok && cache.ok;
    let draining = state.drain.is_draining();
    let mut response = if draining {
        HttpResponse::ServiceUnavailable()
    } else {
        HttpResponse::Ok()
    };
    Ok(response.json(HealthResponse {
        status: match (draining, ok) {
            (true, _) => HealthStatus::Draining,
            (false, true) => HealthStatus::Ok,
            (false, false) => HealthStatus::Degraded,
        },
        timestamp: Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
        checks: HealthChecks {
            database,
            rpc,
            counts,
            sync,
            cache,
            writer,
            history,
            webhooks,
        },
    }))
}

async fn webhooks_check(state: &AppState) -> WebhooksCheck {
    let (pool, cluster) = (state.store.pool(), state.cluster.as_str());
    let (enabled, backlog) = futures_util::join!(
        tokio::time::timeout(CHECK_DEADLINE, state.deliverer.send(IsDelivering)),
        tokio::time::timeout(CHECK_DEADLINE, deliver::backlog(pool, cluster)),
    );
    let backlog = backlog.ok().and_then(Result::ok).unwrap_or_default();
    WebhooksCheck {
        enabled: matches!(enabled, Ok(Ok(true))),
        active: backlog.active,
        disabled: backlog.disabled,
        pending: backlog.pending,
        oldest_pending_age_ms: backlog
            .oldest_committed_at
            .map(|at| (Utc::now() - at).num_milliseconds().max(0) as u64),
    }
}

async fn history_check(state: &AppState) -> HistoryCheck {
    let stats = match &state.history {
        Some(writer) => tokio::time::timeout(CHECK_DEADLINE, writer.send(GetHistoryStats))
            .await
            .ok()
            .and_then(Result::ok),
        None => None,
    };
    HistoryCheck {
        enabled: state.history.is_some(),
        recording: stats.is_some_and(|s| s.leading),
        queued: stats.map_or(0, |s| s.queued),
        dropped: stats.map_or(0, |s| s.dropped),
        failing: stats.is_some_and(|s| s.failing),
    }
}

async fn database_check(state: &AppState) -> (DatabaseCheck, Counts) {
    let started = Instant::now();
    let query = async {
        let counts = health::counts(&state.store, state.cluster.as_str()).await;
        counts.ok().map(|c| Counts {
            pools: c.pools,
            tx_log: c.tx_log,
        })
    };
    let counts = tokio::time::timeout(CHECK_DEADLINE, query)
        .await
        .ok()
        .flatten();
    let latency_ms = started.elapsed().as_millis() as u64;
    match counts {
        Some(counts) => (
            DatabaseCheck {
                ok: true,
                latency_ms,
            },
            counts,
        ),
        None => (
            DatabaseCheck {
                ok: false,
                latency_ms,
            },
            Counts {
                pools: 0,
                tx_log: 0,
            },
        ),
    }
}

async fn rpc_check(state: &AppState) -> RpcCheck {
    let ask = state.chain.send(GetSlot {
        deadline: CHECK_DEADLINE,
    });
    match tokio::time::timeout(CHECK_DEADLINE, ask).await {
        Ok(Ok(Ok(slot))) => RpcCheck { ok: true, slot },
        _ => RpcCheck { ok: false, slot: 0 },
    }
}

/// A tip older than this is a leader gone, not the chain's tip.
const TIP_FRESH_SECONDS: f64 = 30.0;

/// The leader's slots as it recorded them, for a follower (which reads no
/// source of its own): None when unreadable or stale.
async fn leader_tip(state: &AppState) -> Option<crate::store::chain_tip::ChainTip> {
    let read = async {
        health::leader_tip(&state.store, state.cluster.as_str(), TIP_FRESH_SECONDS)
            .await
            .ok()
            .flatten()
    };
    tokio::time::timeout(CHECK_DEADLINE, read)
        .await
        .ok()
        .flatten()
}

async fn sync_check(state: &AppState) -> SyncCheck {
    let mut check = sync_check_here(state).await;
    if check.role == SyncRole::Follower
        && let Some(tip) = leader_tip(state).await
    {
        check.stream.processed_slot = tip.processed;
        check.stream.confirmed_slot = tip.confirmed;
    }
    check
}

async fn sync_check_here(state: &AppState) -> SyncCheck {
    match tokio::time::timeout(CHECK_DEADLINE, state.sync.send(GetSyncStatus)).await {
        Ok(Ok(status)) => {
            let last = status.last_complete.as_ref();
            SyncCheck {
                ok: status.is_fresh(Utc::now()),
                cluster: state.cluster.as_str().into(),
                enabled: status.enabled,
                role: if status.leader {
                    SyncRole::Leader
                } else {
                    SyncRole::Follower
                },
                slot: last.map(|(_, r)| r.slot).unwrap_or(0),
                lag_slots: status.lag_slots,
                last_refresh_at: last
                    .map(|(at, _)| at.to_rfc3339_opts(SecondsFormat::Millis, true)),
                last_refresh_ms: last.map(|(_, r)| r.took.as_millis() as u64),
                positions: last.map(|(_, r)| r.positions),
                last_error: status.last_error,
                stream: StreamCheck {
                    source: status.stream.source.into(),
                    connected: status.stream.connected,
                    last_notification_at: status
                        .stream
                        .last_notification_at
                        .map(|at| at.to_rfc3339_opts(SecondsFormat::Millis, true)),
                    reconnects: status.stream.connections.saturating_sub(1),
                    last_error: status.stream.last_error,
                    commitment: status.stream.commitment.name().into(),
                    processed_slot: status.stream.slots.processed,
                    confirmed_slot: status.stream.slots.confirmed,
                    slot_tree_error: status.stream.slots.problem,
                },
            }
        }
        _ => SyncCheck {
            ok: false,
            cluster: state.cluster.as_str().into(),
            enabled: true,
            role: SyncRole::Follower,
            slot: 0,
            lag_slots: None,
            last_refresh_at: None,
            last_refresh_ms: None,
            positions: None,
            last_error: Some("sync worker unavailable".into()),
            stream: StreamCheck {
                source: state.config.rpc.source.as_str().into(),
                connected: false,
                last_notification_at: None,
                reconnects: 0,
                last_error: None,
                commitment: state.config.rpc.commitment.name().into(),
                processed_slot: None,
                confirmed_slot: None,
                slot_tree_error: None,
            },
        },
    }
}

async fn cache_check(state: &AppState) -> CacheCheck {
    match tokio::time::timeout(CHECK_DEADLINE, state.cache.send(CacheStatsRequest)).await {
        Ok(Ok(s)) => CacheCheck {
            ok: s.ready && s.listening,
            listening: s.listening,
            owners: s.owners,
            unhealthy_owners: s.unhealthy_owners,
            watched_owners: s.watched_owners,
            pools: s.pools,
            evictions: s.evictions,
            subscribers: s.subscribers,
            dropped_subscribers: s.dropped_subscribers,
            feed_version: s.feed_version,
            reads: s.reads,
        },
        _ => CacheCheck {
            ok: false,
            listening: false,
            owners: 0,
            unhealthy_owners: 0,
            watched_owners: 0,
            pools: 0,
            evictions: 0,
            subscribers: 0,
            dropped_subscribers: 0,
            feed_version: 0,
            reads: 0,
        },
    }
}
