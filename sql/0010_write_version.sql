-- A Yellowstone gRPC source delivers every account write with its slot and
-- its write version (within a slot, a later write has a higher version). A row
-- keeps the version of the write it holds; NULL means it holds a read, which
-- counts as the newest write of its slot. So a repeated or reordered write
-- never overwrites a newer one (docs/design.md §14). Adding a nullable column with
-- no default rewrites nothing.
ALTER TABLE pools ADD COLUMN write_version bigint CHECK (write_version >= 0);
ALTER TABLE positions ADD COLUMN write_version bigint CHECK (write_version >= 0);
