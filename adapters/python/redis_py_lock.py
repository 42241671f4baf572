"""redfence lock adapter: redis-py's own lock, `redis.lock.Lock` via `Redis.lock()`.

The flow is the one redis-py documents for a plain job: take the lock with
`timeout` (the lease) and `blocking_timeout` (how long to wait for it), do
the work, release. redis-py can `extend` a lock by hand but renews nothing
by itself, and its docs show no extend for a job like this one, so there is
no renewal here: a job that outlives the lease runs on without the lock. The
lock has no fencing token, so every write carries fence null.

Key: `Redis.lock(name)` uses `name` as the key unchanged, so name = lock.key.
Owner: the token redis-py SETs on the key is `lock.local.token` (bytes, a
uuid1 hex; thread-local, and each job runs in its own thread).
"""

from redis.exceptions import LockNotOwnedError, RedisError

import redfence_adapter as rf


def setup(init):
    lock = init["lock"]
    op_s = lock["op_timeout_ms"] / 1000
    # Lazy: redis-py connects on the first command. The socket timeouts are
    # the scenario's per-operation bound; retries stay redis-py's defaults.
    client = rf.redis_client(init, socket_timeout=op_s, socket_connect_timeout=op_s)
    return client, lock


def job(ctx, msg):
    client, settings = ctx
    lock = client.lock(settings["key"], timeout=settings["lease_ms"] / 1000,
                       blocking_timeout=settings["acquire_deadline_ms"] / 1000)
    try:
        if not lock.acquire():
            return "retry-later", "not acquired within blocking_timeout"
    except RedisError as e:
        return "failed", f"acquire: {rf.describe(e)}"
    lost = None
    try:
        rf.work(msg)
        reply = rf.write(msg["job"], lock.local.token.decode(), None)
    finally:
        try:
            lock.release()
        except LockNotOwnedError as e:  # the lease had expired (or was taken) before release
            lost = e
        except RedisError as e:  # the key expires on its own
            rf.log.warning("release failed: %s", rf.describe(e))
    return rf.report_for_write(reply, lost)


if __name__ == "__main__":
    rf.run("redis", setup, job, fences=False, library_label="redis-py")
