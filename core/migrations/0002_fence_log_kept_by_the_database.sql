-- redfence fenced store, 2: the fence log is kept by the database itself.
--
-- A guarded write logs its decision in its own statement or transaction
-- (0001). That alone trusts every writer to go through it: a worker that
-- updates shared_resources directly (a bug, a script, a library that
-- "knows better") would change the protected value and leave no trace, and
-- a checker reading the log would never see the write. So every change to a
-- protected row is checked when its transaction commits: if that
-- transaction logged no accepted write of the row, the database logs one
-- itself, under an owner that names it as unguarded (no lock ever held that
-- token, so the checker judges it as a write without a lock).
--
-- A refused write changes no row, so no trigger can see it; refusals stay
-- logged by the guarded write that refused them. An unguarded change is
-- logged with fence 0, as a write without a fence: it passed no fence check,
-- and logging the row's last_fence would read as a second accepted write
-- of that fence (a fence-order fault) instead of what it was.

-- The transaction that appended each row, to tie a change to its log entry.
ALTER TABLE fence_log ADD COLUMN tx BIGINT NOT NULL DEFAULT txid_current();
CREATE INDEX fence_log_tx ON fence_log (tx);

CREATE FUNCTION fence_log_unguarded_change() RETURNS trigger AS $$
DECLARE
    row_id TEXT;
    what   TEXT;
BEGIN
    IF TG_OP = 'DELETE' THEN
        row_id := OLD.id;
        what := 'deleted the row';
    ELSE
        IF TG_OP = 'UPDATE'
           AND NEW.value IS NOT DISTINCT FROM OLD.value
           AND NEW.last_fence IS NOT DISTINCT FROM OLD.last_fence THEN
            RETURN NULL;
        END IF;
        -- A new resource, empty: nothing written yet (ensure_resource).
        IF TG_OP = 'INSERT' AND NEW.value = '' AND NEW.last_fence = 0 THEN
            RETURN NULL;
        END IF;
        row_id := NEW.id;
        what := 'changed the row';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM fence_log
                   WHERE tx = txid_current() AND resource_id = row_id
                     AND outcome = 'accepted') THEN
        INSERT INTO fence_log (resource_id, fence, owner_token, outcome)
        VALUES (row_id, 0,
                'unguarded: ' || session_user || ' ' || what || ' without a guarded write',
                'accepted');
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

-- Deferred to commit: a guarded transaction logs its write after its
-- mutations, and only at commit is it known whether it did.
CREATE CONSTRAINT TRIGGER fence_log_unguarded_change
    AFTER INSERT OR UPDATE OR DELETE ON shared_resources
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION fence_log_unguarded_change();
