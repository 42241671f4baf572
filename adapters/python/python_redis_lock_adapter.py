"""redfence lock adapter: the `python-redis-lock` package (module `redis_lock`).

Its documented flow with `auto_renewal=True`: the lock's own daemon thread
extends the key while the job holds it. The lock has no fencing token, so
every write carries fence null.

Whole seconds: `expire` is cast with int() and `acquire(timeout=)` too, so
the lease and the acquire deadline are rounded UP to whole seconds (said on
stderr once). The renewal interval is the scenario's `renew_interval_ms`,
set the way the library's docstring says (subclass, set
`_lock_renewal_interval` after `__init__`); without it the library renews
every expire*2/3. The library has no hold limit.

Key: `Lock(name)` uses 'lock:' + name (and 'lock-signal:' + name for the
list BLPOP waits on), so name = lock.key without its leading 'lock:'.
Owner: `lock.id`, the random value SET on the key.
Waiting uses BLPOP with the deadline as its server-side timeout, so the
socket timeout must outlast it: deadline + op_timeout.
"""

import math

import redis_lock
from redis.exceptions import RedisError

import redfence_adapter as rf

PREFIX = "lock:"  # redis_lock.Lock.__init__: self._name = 'lock:' + name


class ScenarioLock(redis_lock.Lock):
    def __init__(self, *args, renewal_interval_s, **kwargs):
        super().__init__(*args, **kwargs)
        self._lock_renewal_interval = renewal_interval_s


def setup(init):
    lock = init["lock"]
    if not lock["key"].startswith(PREFIX):
        raise ValueError(f"python-redis-lock can only lock keys that start with {PREFIX!r}, "
                         f"not {lock['key']!r}")
    expire_s = max(1, math.ceil(lock["lease_ms"] / 1000))
    wait_s = max(1, math.ceil(lock["acquire_deadline_ms"] / 1000))
    if expire_s * 1000 != lock["lease_ms"] or wait_s * 1000 != lock["acquire_deadline_ms"]:
        rf.log.warning("python-redis-lock takes whole seconds: lease %d ms -> expire=%d s, "
                       "acquire deadline %d ms -> timeout=%d s",
                       lock["lease_ms"], expire_s, lock["acquire_deadline_ms"], wait_s)
    op_s = lock["op_timeout_ms"] / 1000
    client = rf.redis_client(init, socket_timeout=wait_s + op_s, socket_connect_timeout=op_s)
    return client, lock, expire_s, wait_s


def job(ctx, msg):
    client, settings, expire_s, wait_s = ctx
    lock = ScenarioLock(client, settings["key"][len(PREFIX):], expire=expire_s,
                        auto_renewal=True,
                        renewal_interval_s=settings["renew_interval_ms"] / 1000)
    try:
        if not lock.acquire(blocking=True, timeout=wait_s):
            return "retry-later", f"not acquired within {wait_s} s"
    except RedisError as e:
        return "failed", f"acquire: {rf.describe(e)}"
    lost = None
    try:
        rf.work(msg)
        reply = rf.write(msg["job"], lock.id, None)
    finally:
        try:
            lock.release()  # stops the renewal thread, then compare-and-delete
        except redis_lock.NotAcquired as e:  # the lease had gone before release
            lost = e
        except RedisError as e:  # the key expires on its own
            rf.log.warning("release failed: %s", rf.describe(e))
    return rf.report_for_write(reply, lost)


if __name__ == "__main__":
    rf.run("python-redis-lock", setup, job, fences=False)
