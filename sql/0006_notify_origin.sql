-- Each replica applies the changes of its own writes to its health engine as
-- they commit (their rows come back from the statements themselves), so it
-- need not hear them again. Its writer connections name it in the setting
-- lendex.origin; the announcements carry that name (null for any other
-- writer: an external indexer, the operator CLI), and a replica's listener
-- passes over its own. Replaces the functions of 0002 and 0003.

CREATE OR REPLACE FUNCTION lendex_notify_position() RETURNS trigger AS $$
DECLARE
    origin text := nullif(current_setting('lendex.origin', true), '');
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('lendex_positions', json_build_object(
            'cluster', OLD.cluster, 'owner', OLD.owner, 'origin', origin)::text);
        RETURN OLD;
    END IF;
    PERFORM pg_notify('lendex_positions', json_build_object(
        'cluster', NEW.cluster, 'owner', NEW.owner, 'origin', origin)::text);
    IF TG_OP = 'UPDATE' AND OLD.owner IS DISTINCT FROM NEW.owner THEN
        PERFORM pg_notify('lendex_positions', json_build_object(
            'cluster', OLD.cluster, 'owner', OLD.owner, 'origin', origin)::text);
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION lendex_notify_pool() RETURNS trigger AS $$
DECLARE
    origin text := nullif(current_setting('lendex.origin', true), '');
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('lendex_pools', json_build_object(
            'cluster', OLD.cluster, 'pool_address', OLD.pool_address, 'origin', origin)::text);
        RETURN OLD;
    END IF;
    PERFORM pg_notify('lendex_pools', json_build_object(
        'cluster', NEW.cluster, 'pool_address', NEW.pool_address, 'origin', origin)::text);
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION lendex_notify_borrow() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('lendex_borrows', json_build_object(
        'cluster', NEW.cluster, 'owner', NEW.wallet,
        'origin', nullif(current_setting('lendex.origin', true), ''))::text);
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
