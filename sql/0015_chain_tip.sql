-- The leader's slots (docs/design.md §15), for the replicas that read no
-- source: the processed view's slot and the highest confirmed slot, as the
-- leader's source last reported them. A follower's health reports these, and
-- its console marks rows newer than `confirmed_slot` tentative, as the
-- leader's does. One row per cluster, overwritten as the slots move.
CREATE TABLE IF NOT EXISTS chain_tip (
    cluster        text        PRIMARY KEY,
    processed_slot bigint,
    confirmed_slot bigint,
    updated_at     timestamptz NOT NULL DEFAULT now()
);
