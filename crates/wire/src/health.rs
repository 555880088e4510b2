//! GET /api/health (docs/design.md §4.16, §7): each backend's state.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `degraded` when any check fails (the HTTP status is 200 either way);
/// `draining` (HTTP 503) while a stopping replica waits for its load balancer
/// to move away (docs/design.md §13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    Ok,
    Degraded,
    Draining,
}

/// `leader`: this replica holds the cluster's ingester lease and does the
/// background chain work; `follower`: another one does (or none is enabled).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SyncRole {
    Leader,
    Follower,
}

/// A writer lane: each concern has its own queue and connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LaneName {
    Index,
    Admin,
    TxLog,
    Auth,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct HealthResponse {
    pub status: HealthStatus,
    pub timestamp: String,
    pub checks: HealthChecks,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct HealthChecks {
    pub database: DatabaseCheck,
    pub rpc: RpcCheck,
    pub counts: Counts,
    pub sync: SyncCheck,
    pub cache: CacheCheck,
    pub writer: WriterCheck,
    pub history: HistoryCheck,
    pub webhooks: WebhooksCheck,
}

/// Webhooks (docs/design.md §18). Informational: a backlog is for the
/// alert rule, the database check says when the queue cannot be read.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WebhooksCheck {
    /// This replica delivers (it holds the lease; exactly one replica does).
    pub enabled: bool,
    pub active: i64,
    pub disabled: i64,
    /// Deliveries of active webhooks not delivered yet.
    pub pending: i64,
    /// Since the oldest of them committed; null when none is pending.
    pub oldest_pending_age_ms: Option<u64>,
}

/// History (docs/design.md §12): recorded by the leader, stored in the background.
/// Informational: the database check already says when storing cannot work.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct HistoryCheck {
    /// history.retention_days is above 0.
    pub enabled: bool,
    /// This replica records (it leads).
    pub recording: bool,
    /// Rows waiting to be stored.
    pub queued: usize,
    /// Rows dropped, the oldest first, past history.max_pending.
    pub dropped: u64,
    /// The last attempt to store failed (retried as it was).
    pub failing: bool,
}

/// The database writer's lanes (index, admin, tx_log), each with its own queue
/// and connection.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct WriterCheck {
    pub lanes: Vec<LaneCheck>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct LaneCheck {
    pub lane: LaneName,
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
#[derive(Debug, Serialize, Deserialize, ToSchema)]
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
    /// Batches of rows the cache read from the database: loads, and changes
    /// announced by others (this replica's own writes reach it without one).
    pub reads: u64,
}

/// The background refresh: the slot and time of the last complete refresh.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SyncCheck {
    /// False when the last complete refresh is older than 3 intervals + 30 s
    /// (on the leader; a follower does no background work).
    pub ok: bool,
    /// The cluster this replica indexes: mainnet, devnet or localnet.
    pub cluster: Cow<'static, str>,
    pub enabled: bool,
    pub role: SyncRole,
    /// Lowest context slot of the last complete refresh (0 before the first).
    pub slot: u64,
    /// How far the chain's tip had moved past the last complete refresh's
    /// oldest read when it finished: the figure /metrics exports as
    /// `lendex_sync_lag_slots`. Between refreshes the live source (`stream`)
    /// keeps the index at the tip, so the tip minus `slot` is not a lag.
    /// Null before the first refresh, and where the tip could not be read.
    #[serde(rename = "lagSlots")]
    pub lag_slots: Option<u64>,
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

/// The live chain source (on the leader; a follower does not stream). Down
/// does not by itself degrade health: the JSON-RPC poll keeps the index fresh.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct StreamCheck {
    /// "websocket" or "grpc" (`rpc.source`).
    #[schema(example = "websocket")]
    pub source: Cow<'static, str>,
    pub connected: bool,
    #[serde(rename = "lastNotificationAt")]
    pub last_notification_at: Option<String>,
    /// Connections made after the first.
    pub reconnects: u64,
    /// Why the source is down, while it is (e.g. the server refused the token).
    #[serde(rename = "lastError")]
    pub last_error: Option<String>,
    /// What the source reads at (`rpc.commitment`, docs/design.md §15).
    #[schema(example = "confirmed")]
    pub commitment: Cow<'static, str>,
    /// The processed view's slot: the best chain's tip, or the highest
    /// confirmed slot when the best chain is empty. Null until known. A
    /// follower, which reads no source, reports the leader's as recorded in
    /// the database (null when none was recorded in the last 30 s).
    pub processed_slot: Option<u64>,
    /// The highest confirmed slot the source reported (a follower: the
    /// leader's, as for `processed_slot`).
    pub confirmed_slot: Option<u64>,
    /// Why the processed view cannot be trusted now (the slot tree overflowed
    /// or was contradicted): health is `degraded` while this is set.
    pub slot_tree_error: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DatabaseCheck {
    pub ok: bool,
    #[serde(rename = "latencyMs")]
    pub latency_ms: u64,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RpcCheck {
    pub ok: bool,
    pub slot: u64,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Counts {
    /// Pools of the active cluster.
    pub pools: i64,
    /// Transaction records of the active cluster.
    pub tx_log: i64,
}
