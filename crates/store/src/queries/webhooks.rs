//! Webhooks' statements (sql/0019_webhooks.sql), named as the rest of
//! `queries`. A webhook of another creator is matched only when `$n` (the
//! creator to hold to) is null: a pool_admin sees its own alone.

macro_rules! webhook_columns {
    () => {
        "id, url, below_wad::text AS below_wad, owners, pools, description, status,
         created_by, created_at, disabled_reason"
    };
}

/// Keeps other creates out until this one commits, so two replicas cannot
/// both pass the count of `webhooks.max`.
pub const LOCK_WEBHOOKS: &str = "LOCK TABLE webhooks IN SHARE ROW EXCLUSIVE MODE";

/// The webhooks of cluster $1.
pub const COUNT_WEBHOOKS: &str = "SELECT count(*) FROM webhooks WHERE cluster = $1";

/// $1 id, $2 cluster, $3 url, $4 below_wad (text), $5 owners, $6 pools,
/// $7 description, $8 secret, $9 creator; judged from the change log's
/// current tick on.
pub const INSERT_WEBHOOK: &str = concat!(
    "INSERT INTO webhooks (id, cluster, url, below_wad, owners, pools, description, secret,
        created_by, created_tick)
     SELECT $1, $2, $3, $4::text::numeric, $5, $6, $7, $8, $9, tick FROM feed_clock
     RETURNING ",
    webhook_columns!()
);

/// The webhooks of cluster $1, oldest first, of creator $2 unless null.
pub const LIST_WEBHOOKS: &str = concat!(
    "SELECT ",
    webhook_columns!(),
    " FROM webhooks WHERE cluster = $1 AND ($2::text IS NULL OR created_by = $2)
     ORDER BY created_at, id"
);

/// Deletes webhook $2 of cluster $1 (of creator $3 unless null), returning
/// it as it was; its deliveries go with it.
pub const DELETE_WEBHOOK: &str = concat!(
    "DELETE FROM webhooks WHERE cluster = $1 AND id = $2
        AND ($3::text IS NULL OR created_by = $3)
     RETURNING ",
    webhook_columns!()
);

/// Whether webhook $2 of cluster $1 is there (and of creator $3 unless null).
pub const WEBHOOK_VISIBLE: &str = "SELECT 1 FROM webhooks WHERE cluster = $1 AND id = $2
    AND ($3::text IS NULL OR created_by = $3)";

/// The newest $3 deliveries of webhook $2 of cluster $1 (of creator $4
/// unless null), newest first.
pub const LIST_DELIVERIES: &str = "SELECT d.delivery_id, d.change_id, d.status, d.attempts,
        d.last_status, d.last_error, d.events
    FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
    WHERE w.cluster = $1 AND d.webhook_id = $2 AND ($4::text IS NULL OR w.created_by = $4)
    ORDER BY d.seq DESC LIMIT $3";

/// Queues delivery $3 of webhook $2 (cluster $1, creator $4 unless null)
/// again, after those already queued, with the same id: pending, its round's
/// attempts reset.
pub const REDELIVER: &str = "UPDATE webhook_deliveries d
    SET seq = nextval(pg_get_serial_sequence('webhook_deliveries', 'seq')),
        status = 'pending', attempts = 0, first_attempt_at = NULL, next_attempt_at = now()
    FROM webhooks w
    WHERE w.id = d.webhook_id AND w.cluster = $1 AND d.webhook_id = $2 AND d.delivery_id = $3
        AND ($4::text IS NULL OR w.created_by = $4)
    RETURNING d.delivery_id";

// ---- the deliverer's queue (crates/store/src/webhooks/deliver.rs) ----------

/// The first pending delivery of each active webhook of cluster $1 (a
/// webhook's deliveries go one at a time, in order), when it is due; at most
/// $2.
pub const DUE_DELIVERIES: &str = "SELECT * FROM (
        SELECT DISTINCT ON (d.webhook_id) d.delivery_id, d.webhook_id, d.change_id, d.events,
            d.attempts, d.first_attempt_at, d.next_attempt_at, w.url, w.secret
        FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
        WHERE d.status = 'pending' AND w.status = 'active' AND w.cluster = $1
        ORDER BY d.webhook_id, d.seq
    ) head
    WHERE head.next_attempt_at <= now()
    LIMIT $2";

/// Delivery $1 answered 2xx ($2 the status); when its change committed.
pub const DELIVERED: &str = "UPDATE webhook_deliveries
    SET status = 'delivered', attempts = attempts + 1, last_status = $2, last_error = NULL
    WHERE delivery_id = $1 AND status = 'pending'
    RETURNING committed_at";

/// Delivery $1's attempt failed ($2 status, $3 error; its round began at
/// $4): tried again at $5.
pub const RETRY_LATER: &str = "UPDATE webhook_deliveries
    SET attempts = attempts + 1, last_status = $2, last_error = $3,
        first_attempt_at = coalesce(first_attempt_at, $4), next_attempt_at = $5
    WHERE delivery_id = $1 AND status = 'pending'";

/// Delivery $1 failed for good ($2 status, $3 error); its webhook.
pub const FAIL_DELIVERY: &str = "UPDATE webhook_deliveries
    SET status = 'failed', attempts = attempts + 1, last_status = $2, last_error = $3
    WHERE delivery_id = $1 AND status = 'pending'
    RETURNING webhook_id";

/// Webhook $1 disabled, for reason $2.
pub const DISABLE_WEBHOOK: &str = "UPDATE webhooks SET status = 'disabled', disabled_reason = $2
    WHERE id = $1 AND status = 'active'";

/// The rest of webhook $1's pending deliveries failed, for reason $2.
pub const FAIL_PENDING: &str = "UPDATE webhook_deliveries SET status = 'failed', last_error = $2
    WHERE webhook_id = $1 AND status = 'pending'";

/// Cluster $1's webhooks by status, its pending deliveries and when the
/// oldest of them committed.
pub const WEBHOOKS_STATUS: &str = "SELECT
        (SELECT count(*) FROM webhooks WHERE cluster = $1 AND status = 'active'),
        (SELECT count(*) FROM webhooks WHERE cluster = $1 AND status = 'disabled'),
        count(d.*), min(d.committed_at)
    FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
    WHERE w.cluster = $1 AND d.status = 'pending' AND w.status = 'active'";

// ---- the producer (crates/store/src/webhooks/produce.rs) -------------------

/// The active webhooks of cluster $1 as judging needs them.
pub const WEBHOOK_FILTERS: &str = "SELECT id, below_wad::text AS below_wad, owners, pools,
        created_tick
    FROM webhooks WHERE cluster = $1 AND status = 'active'";

/// The last change whose deliveries are stored, for cluster $1 (0: none).
pub const WEBHOOK_CURSOR: &str =
    "SELECT coalesce((SELECT through_tick FROM webhook_cursor WHERE cluster = $1), 0)";

/// Held until commit: one leader stores at a time.
pub const LOCK_WEBHOOK_CURSOR: &str = "INSERT INTO webhook_cursor (cluster) VALUES ($1)
    ON CONFLICT (cluster) DO UPDATE SET through_tick = webhook_cursor.through_tick
    RETURNING through_tick";

pub const SET_WEBHOOK_CURSOR: &str =
    "UPDATE webhook_cursor SET through_tick = greatest(through_tick, $2) WHERE cluster = $1";

/// Deliveries, once each: $1 ids, $2 webhooks, $3 change ids, $4 events,
/// $5 ticks (each one's commit time read from the change log while it
/// holds the tick, else now). A webhook deleted or disabled meanwhile takes
/// none: its row is held shared to the commit, so a disabling that fails
/// its pending deliveries either sees these or is seen by this.
pub const INSERT_DELIVERIES: &str = "INSERT INTO webhook_deliveries
        (delivery_id, webhook_id, change_id, events, committed_at)
    SELECT d.id, d.webhook, d.change, d.events,
        coalesce((SELECT min(at) FROM feed_changes WHERE tick = d.tick), now())
    FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::bigint[])
        WITH ORDINALITY AS d(id, webhook, change, events, tick, n)
    WHERE EXISTS (SELECT 1 FROM webhooks w WHERE w.id = d.webhook AND w.status = 'active'
        FOR SHARE)
    ORDER BY d.n
    ON CONFLICT (delivery_id) DO NOTHING";
