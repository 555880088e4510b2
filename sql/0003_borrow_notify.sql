-- Position detail (docs/design.md §4.11) lists each wallet's recent borrows, which the
-- health cache keeps in memory. Any write that can change that list (a borrow
-- recorded, or its status moved to or from failed), whoever makes it, is
-- announced so every replica forgets the wallet's cached list.

CREATE OR REPLACE FUNCTION lendex_notify_borrow() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('lendex_borrows', json_build_object(
        'cluster', NEW.cluster, 'owner', NEW.wallet)::text);
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS tx_log_notify_borrow ON tx_log;
CREATE TRIGGER tx_log_notify_borrow
    AFTER INSERT OR UPDATE ON tx_log
    FOR EACH ROW
    WHEN (NEW.action = 'borrow')
    EXECUTE FUNCTION lendex_notify_borrow();
