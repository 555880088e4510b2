-- Feed readings at processed (docs/design.md §17): the overlay holds a feed
-- account's reading of the best chain like any account, 'g' its image as an
-- oracle_feeds row would hold it; the change log carries the same kind.
ALTER TABLE processed_overlay DROP CONSTRAINT IF EXISTS processed_overlay_kind_check;
ALTER TABLE processed_overlay ADD CONSTRAINT processed_overlay_kind_check
    CHECK (kind IN ('v', 'w', 'c', 'g'));

ALTER TABLE feed_changes DROP CONSTRAINT IF EXISTS feed_changes_kind_check;
ALTER TABLE feed_changes ADD CONSTRAINT feed_changes_kind_check
    CHECK (kind IN ('p', 'P', 'o', 'x', 't', 'T', 'v', 'w', 'c', 'r', 'f', 'g'));
