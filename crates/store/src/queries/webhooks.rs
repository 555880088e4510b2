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
