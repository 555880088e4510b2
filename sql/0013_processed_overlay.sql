-- The processed view (docs/design.md §15), shared by every replica.
--
-- The leader alone reads the chain, and so alone knows the best chain. It
-- keeps here what the overlay of that chain holds now, one row per account,
-- as the row would be stored, and logs each move in the feed's change log
-- under the tick of its transaction: every replica lays the same overlay at
-- the same place in the one order (§13), and a replica that loads reads this
-- table with the rest of its snapshot.

CREATE TABLE IF NOT EXISTS processed_overlay (
    cluster text   NOT NULL,
    account text   NOT NULL,
    -- 'v' a position as it would be stored, 'w' a pool as it would be
    -- stored, 'c' a position closed at processed.
    kind    "char" NOT NULL CHECK (kind IN ('v', 'w', 'c')),
    image   jsonb  NOT NULL,
    PRIMARY KEY (cluster, account)
);

-- The change log takes the overlay's moves: 'v', 'w', 'c' an account laid
-- over (its image), 'r' one retracted ({account, rolled_back}).
ALTER TABLE feed_changes DROP CONSTRAINT IF EXISTS feed_changes_kind_check;
ALTER TABLE feed_changes ADD CONSTRAINT feed_changes_kind_check
    CHECK (kind IN ('p', 'P', 'o', 'x', 't', 'T', 'v', 'w', 'c', 'r'));

-- lendex_overlay_set, lendex_overlay_pool and lendex_overlay_retract live in
-- sql/functions.sql.
