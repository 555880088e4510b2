-- Webhooks (docs/design.md §18): the endpoints operators register through the
-- signed handshake, and the deliveries owed to each. A webhook judges owners
-- from the change log's tick at its creation on (`created_tick`); its secret
-- is shown once, at creation, and kept to sign every attempt.
CREATE TABLE IF NOT EXISTS webhooks (
    id              text        PRIMARY KEY CHECK (id ~ '^wh_[0-9a-f]{24}$'),
    cluster         text        NOT NULL CHECK (cluster IN ('mainnet', 'devnet', 'localnet')),
    url             text        NOT NULL CHECK (octet_length(url) <= 2048),
    below_wad       u128        NOT NULL CHECK (below_wad > 0 AND below_wad <= 10000000000000000000),
    -- NULL: every owner (any pool).
    owners          text[]      CHECK (cardinality(owners) <= 10000),
    pools           text[],
    description     text,
    secret          text        NOT NULL CHECK (secret LIKE 'whsec_%'),
    status          text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
    disabled_reason text,
    created_by      text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    created_tick    bigint      NOT NULL
);
CREATE INDEX IF NOT EXISTS webhooks_creator_idx ON webhooks (cluster, created_by, created_at);

-- A delivery: one change's events for one webhook (a part of at most 1,000).
-- `seq` orders a webhook's deliveries; a redelivery takes a new one, so it
-- goes after those already queued. Deleting a webhook deletes its deliveries.
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    seq             bigserial   PRIMARY KEY,
    delivery_id     text        NOT NULL UNIQUE CHECK (delivery_id ~ '^msg_[0-9a-f]{32}$'),
    webhook_id      text        NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    change_id       text        NOT NULL,
    status          text        NOT NULL DEFAULT 'pending'
                                CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts        integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_status     integer,
    last_error      text,
    events          jsonb       NOT NULL CHECK (jsonb_typeof(events) = 'array'),
    -- When the change that caused it committed (change committed -> 2xx).
    committed_at    timestamptz NOT NULL,
    -- The first attempt of this round (the retry window runs from it).
    first_attempt_at timestamptz,
    next_attempt_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_pending_idx
    ON webhook_deliveries (webhook_id, seq) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS webhook_deliveries_webhook_idx
    ON webhook_deliveries (webhook_id, seq DESC);

-- The last change whose deliveries are stored (docs/design.md §18): every
-- replica judges every change and keeps what it found until a leader has
-- stored past it, so a leader that takes over stores what the last one had
-- not, once (delivery ids are derived, and stored once each).
CREATE TABLE IF NOT EXISTS webhook_cursor (
    cluster       text   PRIMARY KEY CHECK (cluster IN ('mainnet', 'devnet', 'localnet')),
    through_tick  bigint NOT NULL DEFAULT 0
);
