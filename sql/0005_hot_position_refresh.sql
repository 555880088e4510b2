-- A reconciliation re-reads every position of a pool and stamps each row with
-- the slot and time of the read (slot safety needs the slot). With
-- last_synced_at in positions_owner_idx each stamp was a new index entry in all
-- three indexes, never a heap-only (HOT) update: 10,000 unchanged positions took
-- about 350 ms of writes per reconcile. No query reads that column through the
-- index (an owner's few rows are ordered in memory), so the index keys on the
-- owner alone and the stamps become HOT updates.
CREATE INDEX IF NOT EXISTS positions_owner_only_idx ON positions (cluster, owner);
DROP INDEX IF EXISTS positions_owner_idx;
