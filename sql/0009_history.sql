-- History (docs/design.md §12): every moment that matters of each account's health,
-- what happened to accounts, the pools' prices and the market, kept
-- `history.retention_days` and served back exactly.
--
-- The large tables are range-partitioned by UTC day on their time, made ahead
-- and dropped whole when they leave the retention window (never deleted row by
-- row, so no VACUUM of a large table). Points carry a dense owner id, not the
-- 44-character key. Values are exact NUMERIC whole numbers; the recorder is
-- their only writer, so they carry no domain checks (each costs a COPY).

-- Owners and pools by dense id, per cluster, with what the recorder last
-- recorded of each as of the writer's last checkpoint: a leader that takes
-- over starts from these baselines and the points stored after it.
CREATE TABLE history_owners (
    id                    integer     GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    cluster               text        NOT NULL,
    owner                 text        NOT NULL,
    -- Null until the owner's first point (an event can name it before).
    last_health_factor_wad numeric,
    last_bad_debt         boolean,
    last_at               timestamptz,
    UNIQUE (cluster, owner)
) WITH (fillfactor = 70); -- room for the flush's updates in place (HOT)

CREATE TABLE history_pools (
    id          integer     GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    cluster     text        NOT NULL,
    pool        text        NOT NULL,
    -- The last recorded oracle (last_at null: none recorded yet).
    last_price  bigint,
    last_conf   numeric,
    last_expo   integer,
    last_at     timestamptz,
    UNIQUE (cluster, pool)
);

-- The one replica allowed to write a cluster's history: a leader that takes
-- over bumps `epoch`, and every flush names its epoch and batch in the same
-- transaction as its rows, so a former leader's late flush cannot land and a
-- batch whose commit went unanswered is known to be stored. `checkpoint_at`:
-- history_owners' last values hold every point stored up to this time (the
-- writer checkpoints them now and then rather than with every flush).
CREATE TABLE history_writers (
    cluster       text        PRIMARY KEY,
    epoch         bigint      NOT NULL,
    flushed       bigint      NOT NULL DEFAULT 0,
    checkpoint_at timestamptz
);

CREATE TABLE history_points (
    owner_id             integer     NOT NULL,
    cause                smallint    NOT NULL,
    at                   timestamptz NOT NULL,
    slot                 bigint      NOT NULL,
    health_factor_wad    numeric     NOT NULL,
    collateral_value_wad numeric     NOT NULL,
    debt_value_wad       numeric     NOT NULL
) PARTITION BY RANGE (at);
-- By owner alone: a day holds a handful of points per owner, so B-tree
-- deduplication keeps this index at a few bytes a point; reads sort by time.
CREATE INDEX history_points_owner ON history_points (owner_id);
-- Rows arrive in time order, so a block range summary finds the points after
-- a checkpoint (a takeover) for almost nothing per row.
CREATE INDEX history_points_at ON history_points USING brin (at);

CREATE SEQUENCE history_event_ids;
CREATE TABLE history_events (
    id                       bigint      NOT NULL DEFAULT nextval('history_event_ids'),
    cluster                  text        NOT NULL,
    kind                     smallint    NOT NULL,
    owner_id                 integer     NOT NULL,
    at                       timestamptz NOT NULL,
    slot                     bigint      NOT NULL,
    health_factor_before_wad numeric     NOT NULL,
    health_factor_after_wad  numeric     NOT NULL,
    debt_pool_id             integer,
    repaid                   numeric,
    collateral_pool_id       integer,
    seized                   numeric,
    -- The pools the owner held (liquidated: the two pools): the pool filter.
    pool_ids                 integer[]   NOT NULL
) PARTITION BY RANGE (at);
CREATE INDEX history_events_cluster ON history_events (cluster, id);
CREATE INDEX history_events_kind ON history_events (cluster, kind, id);
CREATE INDEX history_events_owner ON history_events (owner_id, id);
-- No index on pool_ids: a GIN entry per event was the dearest part of storing
-- a market-wide move; the pool filter reads the range newest first instead.

CREATE TABLE history_prices (
    pool_id  integer     NOT NULL,
    at       timestamptz NOT NULL,
    slot     bigint      NOT NULL,
    price    bigint,
    conf     numeric,
    expo     integer
) PARTITION BY RANGE (at);
CREATE INDEX history_prices_pool ON history_prices (pool_id, at);

CREATE TABLE history_market (
    cluster                    text        NOT NULL,
    at                         timestamptz NOT NULL,
    owners                     bigint      NOT NULL,
    owners_under_water         bigint      NOT NULL,
    owners_at_risk             bigint      NOT NULL,
    debt_value_wad_under_water numeric     NOT NULL,
    bad_debt_value_wad         numeric     NOT NULL
) PARTITION BY RANGE (at);
CREATE INDEX history_market_at ON history_market (cluster, at);

-- The market's buckets, kept as the samples come (30 days of 10 s samples are
-- 259,200 rows; an hour's buckets over them are 720): the count, the last
-- sample's values and the most owners under water at any sample.
CREATE TABLE history_market_buckets (
    cluster                    text        NOT NULL,
    resolution                 smallint    NOT NULL,
    start                      timestamptz NOT NULL,
    count                      bigint      NOT NULL,
    last_at                    timestamptz NOT NULL,
    owners                     bigint      NOT NULL,
    owners_under_water         bigint      NOT NULL,
    owners_under_water_max     bigint      NOT NULL,
    owners_at_risk             bigint      NOT NULL,
    debt_value_wad_under_water numeric     NOT NULL,
    bad_debt_value_wad         numeric     NOT NULL,
    PRIMARY KEY (cluster, resolution, start)
) PARTITION BY RANGE (start);

-- The partition helpers (lendex_history_make_day and the rest) live in
-- sql/functions.sql, applied on every start.
