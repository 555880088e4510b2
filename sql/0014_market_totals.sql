-- The market's history also records every pool's deposits and borrows at its
-- price (the pools' status totals), so the overview can say how they moved
-- (docs/design.md §12). Samples recorded before this carry nulls: unknown,
-- never zero.
ALTER TABLE history_market
    ADD COLUMN deposits_value_wad numeric,
    ADD COLUMN borrows_value_wad  numeric;
ALTER TABLE history_market_buckets
    ADD COLUMN deposits_value_wad numeric,
    ADD COLUMN borrows_value_wad  numeric;
