"""redfence lock adapter: `pottery.Redlock` on one master (the worker's Redis).

Pottery's documented flow: `Redlock(key=, masters={redis},
auto_release_time=)`, `acquire(timeout=)`, work, `release()`. Redlock's
lease is `auto_release_time` (seconds, float); it extends only when asked
(`extend()`, at most `num_extensions` times), and a plain job does not ask,
so there is no renewal here. The lock has no fencing token, so every write
carries fence null.

`raise_on_redis_errors=True` (a documented constructor argument): with the
default False, a Redis error during acquire is logged and looks exactly like
contention, and one during release looks like a lost lease; the protocol
wants Redis errors reported as `failed`.

Key: Redlock stores under f'{_KEY_PREFIX}:{key}' with _KEY_PREFIX =
'redlock' (pottery.base.Primitive.key's setter); the subclass below sets
_KEY_PREFIX to lock.key's part before its first ':' and passes the rest as
`key`, so the stored key is lock.key exactly.
Owner: `_uuid`, the str(uuid4()) Redlock SETs on the key, fresh per attempt.
"""

from pottery import QuorumIsImpossible, Redlock, ReleaseUnlockedLock
from redis.exceptions import RedisError

import redfence_adapter as rf


def redlock_class(lock_key):
    prefix, sep, suffix = lock_key.partition(":")
    if not sep or not prefix or not suffix:
        raise ValueError(f"pottery keys are PREFIX:KEY; {lock_key!r} is not")
    # A class of its own: Redlock caches its registered scripts per class.
    return type("ScenarioRedlock", (Redlock,), {"__slots__": (), "_KEY_PREFIX": prefix}), suffix


def setup(init):
    lock = init["lock"]
    cls, key = redlock_class(lock["key"])
    op_s = lock["op_timeout_ms"] / 1000
    client = rf.redis_client(init, socket_timeout=op_s, socket_connect_timeout=op_s)
    probe = cls(key=key, masters={client})
    if probe.key != lock["key"]:
        raise ValueError(f"Redlock would lock {probe.key!r}, not {lock['key']!r}")
    return cls, key, client, lock


def job(ctx, msg):
    cls, key, client, settings = ctx
    lock = cls(key=key, masters={client}, auto_release_time=settings["lease_ms"] / 1000,
               raise_on_redis_errors=True)
    try:
        if not lock.acquire(timeout=settings["acquire_deadline_ms"] / 1000):
            return "retry-later", "no quorum within the acquire timeout"
    except (QuorumIsImpossible, RedisError) as e:
        return "failed", f"acquire: {rf.describe(e)}"
    lost = None
    try:
        rf.work(msg)
        reply = rf.write(msg["job"], lock._uuid, None)
    finally:
        try:
            lock.release()
        except ReleaseUnlockedLock as e:  # the lease had gone before release
            lost = e
        except (QuorumIsImpossible, RedisError) as e:  # the key expires on its own
            rf.log.warning("release failed: %s", rf.describe(e))
    return rf.report_for_write(reply, lost)


if __name__ == "__main__":
    rf.run("pottery", setup, job, fences=False)
