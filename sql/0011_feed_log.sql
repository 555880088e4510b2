-- One feed across replicas (docs/design.md §13). Every replica must apply the
-- index's changes in one order, the database's commit order, and see each
-- change as it was committed (a row read later may hold a newer change:
-- two replicas reading at different moments would compute different events).
--
-- So each transaction that changes what the health engine reads takes the
-- next tick of one clock row. The row lock is held to COMMIT, so ticks follow
-- commit order and have no holes (a rolled-back transaction gives its tick
-- back). The same transaction logs each changed row's image under its tick,
-- and NOTIFYs the tick once. Replicas read the log strictly tick after tick.
-- The epoch names this database's feed: event ids are `<epoch>.<sequence>`
-- with the sequence made of the tick, the same on every replica.

CREATE TABLE IF NOT EXISTS feed_clock (
    only_row       boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    epoch          bigint  NOT NULL,
    tick           bigint  NOT NULL DEFAULT 0,
    -- Ticks at or below it may be gone from feed_changes: a replica that has
    -- not applied them reloads everything.
    pruned_through bigint  NOT NULL DEFAULT 0
);
INSERT INTO feed_clock (epoch)
    VALUES ((extract(epoch FROM clock_timestamp()) * 1000)::bigint)
    ON CONFLICT DO NOTHING;

CREATE TABLE IF NOT EXISTS feed_changes (
    tick    bigint      NOT NULL,
    seq     bigserial,
    at      timestamptz NOT NULL DEFAULT now(),
    cluster text        NOT NULL,
    -- 'p' a pool as stored, 'P' a pool removed, 'o' a position as stored,
    -- 'x' a position removed (its last image).
    kind    "char"      NOT NULL CHECK (kind IN ('p', 'P', 'o', 'x')),
    image   jsonb       NOT NULL,
    PRIMARY KEY (tick, seq)
);

-- The clock's functions and the triggers that log each change live in
-- sql/functions.sql, applied on every start.
