-- The pools' Pyth feed accounts (docs/design.md §17), as last read: one row per
-- feed account a registered pool names, written by the leader's chain work
-- with the slot (and write version) of its read, and logged in the change log
-- like a pool, so every replica applies the same readings in the same order.
-- `status` is what the account is (a missing account is a reading too); the
-- fields are the PriceUpdateV2's, whenever its data decodes.
CREATE TABLE IF NOT EXISTS oracle_feeds (
    cluster       text    NOT NULL CHECK (cluster IN ('mainnet', 'devnet', 'localnet')),
    feed_address  text    NOT NULL,
    status        text    NOT NULL CHECK (status IN ('missing', 'not_a_price_update',
                                                     'partially_verified', 'nonpositive', 'ok')),
    price         bigint,
    conf          u64,
    exponent      integer,
    publish_time  bigint,
    posted_slot   u64,
    slot          bigint  NOT NULL CHECK (slot >= 0),
    write_version bigint  CHECK (write_version >= 0),
    read_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster, feed_address)
);

-- 'f' a feed as stored. (Feeds nobody names any more stay: a pool may name
-- one again, and they are a handful of rows.)
ALTER TABLE feed_changes DROP CONSTRAINT IF EXISTS feed_changes_kind_check;
ALTER TABLE feed_changes ADD CONSTRAINT feed_changes_kind_check
    CHECK (kind IN ('p', 'P', 'o', 'x', 't', 'T', 'v', 'w', 'c', 'r', 'f'));

-- lendex_log_feed lives in sql/functions.sql.
