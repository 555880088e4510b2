//! GET /api/health: liveness with the state of each backend (spec 4.16). Always
//! HTTP 200, answered within 3 s whatever the database or the RPC do; a failing
//! check turns status to "degraded".

use std::time::{Duration, Instant};

use actix_web::{HttpResponse, web};
use chrono::{SecondsFormat, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::actors::chain_reader::GetSlot;
use crate::actors::chain_sync::GetSyncStatus;
use crate::actors::health_cache::Stats as CacheStatsRequest;
use crate::db::queries;
use crate::error::ApiResult;
use crate::http::state::AppState;

/// Each check gets this long, and they run concurrently, so the answer comes within 3 s.
pub(super) const CHECK_DEADLINE: Duration = Duration::from_millis(2500);

#[derive(Serialize, ToSchema)]
pub struct HealthResponse {
    /// "ok" or "degraded".
    pub status: String,
    pub timestamp: String,
    pub checks: HealthChecks,
}

#[derive(Serialize, ToSchema)]
pub struct HealthChecks {
    pub database: DatabaseCheck,
    pub rpc: RpcCheck,
    pub counts: Counts,
    pub sync: SyncCheck,
    pub cache: CacheCheck,
    pub writer: WriterCheck,
}

/// The database writer's lanes (index, admin, tx_log), each with its own queue
/// and connection.
#[derive(Serialize, ToSchema)]
pub struct WriterCheck {
    pub lanes: Vec<LaneCheck>,
}

#[derive(Serialize, ToSchema)]
pub struct LaneCheck {
    /// index, admin or tx_log.
    pub lane: String,
    /// Writes waiting for the next batch.
    pub queued: usize,
    pub batches: u64,
    pub writes: u64,
    #[serde(rename = "largestBatch")]
    pub largest_batch: usize,
    /// Batches that failed as a whole (database down or stalled).
    #[serde(rename = "failedBatches")]
    pub failed_batches: u64,
    /// Writes answered 503 unapplied after waiting past their share of database.write_timeout_ms.
    #[serde(rename = "expiredWrites")]
    pub expired_writes: u64,
    /// Duration of the last batch, commit included.
    #[serde(rename = "lastBatchMs")]
    pub last_batch_ms: Option<f64>,
}

/// The health-factor cache: loaded (the feed answers), listening for changes
/// (else it may miss some, and reloads once the connection is back), and its size.
#[derive(Serialize, ToSchema)]
pub struct CacheCheck {
    /// Loaded and listening.
    pub ok: bool,
    pub listening: bool,
    pub owners: usize,
    #[serde(rename = "unhealthyOwners")]
    pub unhealthy_owners: usize,
    /// Owners at or above 1.0 and below 2.0 WAD (the at-risk band).
    #[serde(rename = "watchedOwners")]
    pub watched_owners: usize,
    pub pools: usize,
    pub evictions: u64,
    pub subscribers: usize,
    /// Subscribers dropped because they fell too far behind.
    #[serde(rename = "droppedSubscribers")]
    pub dropped_subscribers: u64,
    /// Bumped by every change to the feed.
    #[serde(rename = "feedVersion")]
    pub feed_version: u64,
}

/// The background refresh: the slot and time of the last complete refresh.
#[derive(Serialize, ToSchema)]
pub struct SyncCheck {
    /// False when the last complete refresh is older than 3 intervals + 30 s
    /// (on the leader; a follower does no background work).
    pub ok: bool,
    pub enabled: bool,
    /// `leader`: this replica holds the cluster's ingester lease and does the
    /// background chain work; `follower`: another one does (or none is enabled).
    #[schema(value_type = String)]
    pub role: &'static str,
    /// Lowest context slot of the last complete refresh (0 before the first).
    pub slot: u64,
    #[serde(rename = "lastRefreshAt")]
    pub last_refresh_at: Option<String>,
    /// Duration of the last complete refresh.
    #[serde(rename = "lastRefreshMs")]
    pub last_refresh_ms: Option<u64>,
    pub positions: Option<u64>,
    #[serde(rename = "lastError")]
    pub last_error: Option<String>,
    pub stream: StreamCheck,
}

/// The RPC websocket (on the leader; a follower does not stream).
#[derive(Serialize, ToSchema)]
pub struct StreamCheck {
    pub connected: bool,
    #[serde(rename = "lastNotificationAt")]
    pub last_notification_at: Option<String>,
    /// Connections made after the first.
    pub reconnects: u64,
}

#[derive(Serialize, ToSchema)]
pub struct DatabaseCheck {
    pub ok: bool,
    #[serde(rename = "latencyMs")]
    pub latency_ms: u64,
}

#[derive(Serialize, ToSchema)]
pub struct RpcCheck {
    pub ok: bool,
    pub slot: u64,
}

#[derive(Serialize, ToSchema)]
pub struct Counts {
    /// Pools of the active cluster.
    pub pools: i64,
    /// Transaction records of the active cluster.
    pub tx_log: i64,
}

#[utoipa::path(get, path = "/api/health", tag = "health",
    responses((status = 200, body = HealthResponse, description = "status of the service and of each dependency")))]
pub async fn health(state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let (db, rpc, sync, cache, lanes) = futures_util::join!(
        database_check(&state),
        rpc_check(&state),
        sync_check(&state),
        cache_check(&state),
        tokio::time::timeout(CHECK_DEADLINE, state.writer.stats())
    );
    let writer = WriterCheck {
        lanes: lanes
            .unwrap_or_default()
            .into_iter()
            .map(|l| LaneCheck {
                lane: l.lane.to_string(),
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
    Ok(HttpResponse::Ok().json(HealthResponse {
        status: if ok { "ok" } else { "degraded" }.to_string(),
        timestamp: Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
        checks: HealthChecks {
            database,
            rpc,
            counts,
            sync,
            cache,
            writer,
        },
    }))
}

async fn database_check(state: &AppState) -> (DatabaseCheck, Counts) {
    let started = Instant::now();
    let query = async {
        let client = state.db.get().await.ok()?;
        let stmt = client.prepare_cached(queries::HEALTH_COUNTS).await.ok()?;
        let row = client
            .query_one(&stmt, &[&state.cluster.as_str()])
            .await
            .ok()?;
        Some(Counts {
            pools: row.get("pools"),
            tx_log: row.get("tx_log"),
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

async fn sync_check(state: &AppState) -> SyncCheck {
    match tokio::time::timeout(CHECK_DEADLINE, state.sync.send(GetSyncStatus)).await {
        Ok(Ok(status)) => {
            let last = status.last_complete.as_ref();
            SyncCheck {
                ok: status.is_fresh(Utc::now()),
                enabled: status.enabled,
                role: if status.leader { "leader" } else { "follower" },
                slot: last.map(|(_, r)| r.slot).unwrap_or(0),
                last_refresh_at: last
                    .map(|(at, _)| at.to_rfc3339_opts(SecondsFormat::Millis, true)),
                last_refresh_ms: last.map(|(_, r)| r.took.as_millis() as u64),
                positions: last.map(|(_, r)| r.positions),
                last_error: status.last_error,
                stream: StreamCheck {
                    connected: status.stream.connected,
                    last_notification_at: status
                        .stream
                        .last_notification_at
                        .map(|at| at.to_rfc3339_opts(SecondsFormat::Millis, true)),
                    reconnects: status.stream.connections.saturating_sub(1),
                },
            }
        }
        _ => SyncCheck {
            ok: false,
            enabled: true,
            role: "follower",
            slot: 0,
            last_refresh_at: None,
            last_refresh_ms: None,
            positions: None,
            last_error: Some("sync worker unavailable".into()),
            stream: StreamCheck {
                connected: false,
                last_notification_at: None,
                reconnects: 0,
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
        },
    }
}
