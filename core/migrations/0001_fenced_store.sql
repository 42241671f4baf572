-- redfence fenced store: the tables the storage side of the protocol needs.

-- Single-statement fencing: a write carries its fence in the WHERE clause.
CREATE TABLE shared_resources (
    id          TEXT PRIMARY KEY,
    value       TEXT NOT NULL DEFAULT '',
    last_fence  BIGINT NOT NULL DEFAULT 0
);

-- Multi-statement fencing: one guard row per resource, locked FOR UPDATE for
-- the whole transaction that checks the fence and runs the mutations.
CREATE TABLE resource_guards (
    resource_id TEXT PRIMARY KEY,
    last_fence  BIGINT NOT NULL DEFAULT 0
);

-- Idempotent completion: the primary key makes a redelivered job a no-op.
CREATE TABLE job_completions (
    job_id       TEXT PRIMARY KEY,
    resource_id  TEXT NOT NULL,
    fence        BIGINT NOT NULL,
    owner_token  TEXT NOT NULL,
    completed_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
);

-- Durable fence source: survives a Redis failover that loses an INCR.
CREATE TABLE fence_counters (
    resource_id TEXT PRIMARY KEY,
    value       BIGINT NOT NULL
);

-- Every accepted and rejected fenced write, in commit order: the ground truth
-- the checker reads. Append-only, enforced below.
CREATE TABLE fence_log (
    seq         BIGSERIAL PRIMARY KEY,
    resource_id TEXT NOT NULL,
    fence       BIGINT NOT NULL,
    owner_token TEXT NOT NULL,
    job_id      TEXT,
    outcome     TEXT NOT NULL CHECK (outcome IN ('accepted', 'stale', 'not_found', 'duplicate')),
    at          TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX fence_log_resource ON fence_log (resource_id, seq);

CREATE FUNCTION fence_log_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'fence_log is append-only';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER fence_log_append_only
    BEFORE UPDATE OR DELETE ON fence_log
    FOR EACH ROW EXECUTE FUNCTION fence_log_append_only();
