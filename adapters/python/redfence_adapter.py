"""The redfence lock-adapter protocol (version 1), for Python adapters.

An adapter runs a team's real lock library and talks to the redfence harness
over stdin/stdout in newline-delimited JSON (docs/adapter-protocol.md). This
module is the protocol side, so that each adapter file is only its library's
job flow:

    import redfence_adapter as rf

    def setup(init):            # runs once, on `init`; must not block on Redis
        return context
    def job(context, msg):      # runs once per `job`, in its own thread
        ...
        reply = rf.write(msg["job"], owner, None)   # the protected write
        return "success", "detail"
    rf.run("library-dist-name", setup, job, fences=False)

What it does:

- reads `init`, calls `setup`, answers `ready` (library name and installed
  version from importlib.metadata);
- runs every `job` in a thread of its own (jobs may overlap) and answers
  `done` with what the job function returned;
- `write()` and `next_fence()` send the request lines and block until the
  matching `written` / `fence` reply, which the stdin reader dispatches by
  `id`; a reply that does not come within the wait bound is an indeterminate
  error (`definite: false`), never a guess;
- `shutdown` or EOF on stdin: exit 0 promptly; malformed input: an `error`
  message, exit 2.

Everything is bounded: a line is at most 64 KiB both ways, at most
MAX_JOBS jobs and MAX_PENDING requests are outstanding, every wait has a
timeout. stdout carries protocol lines only: file descriptor 1 is moved
aside at import and replaced by stderr, so a library (or C code) that prints
cannot corrupt the stream. Library logs go to stderr. Standard library only,
but for `redis_client()`, which imports redis-py when it is called.
"""

import importlib.metadata
import json
import logging
import os
import sys
import threading
import time

PROTOCOL = 1
LINE_MAX = 64 * 1024  # bytes in one line, newline excluded
MAX_JOBS = 256  # jobs running at once; more is refused with `failed`
MAX_PENDING = 1024  # write / next-fence requests awaiting a reply
WRITE_WAIT_S = 30.0  # a `written` that takes longer is indeterminate
FENCE_WAIT_S = 30.0  # a `fence` that takes longer is an error
SHUTDOWN_GRACE_S = 1.0  # running jobs get this long to end (and release) on shutdown
REPORTS = ("success", "already-done", "retry-later", "ownership-lost", "failed")

# stdout is the protocol channel: keep a private handle on fd 1, then point
# fd 1 and sys.stdout at stderr so stray prints land in the harness's log.
_out = os.fdopen(os.dup(1), "wb", buffering=0)
os.dup2(2, 1)
sys.stdout = sys.stderr
logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                    format="%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s")
log = logging.getLogger("redfence_adapter")

_out_lock = threading.Lock()
_state = threading.Lock()  # guards every field below
_pending = {}  # id -> [threading.Event, reply dict or None]
_next_id = 0
_jobs = {}  # thread -> job id
_stopping = threading.Event()


class ProtocolError(Exception):
    """The harness sent something this adapter cannot understand."""


def send(msg):
    """Writes one message as one JSON line on the protocol channel."""
    line = json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if len(line) > LINE_MAX and isinstance(msg.get("detail"), str):
        msg = dict(msg, detail=msg["detail"][:1024] + " [truncated]")
        line = json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if len(line) > LINE_MAX:
        raise ValueError(f"a {msg.get('type')} message of {len(line)} bytes is over the line bound")
    with _out_lock:
        _out.write(line + b"\n")


def _request(msg, wait_s):
    """Sends a request with a fresh id and waits for its reply; None on timeout."""
    global _next_id
    with _state:
        if _stopping.is_set():
            return None
        if len(_pending) >= MAX_PENDING:
            raise RuntimeError(f"{MAX_PENDING} requests already await a reply")
        _next_id += 1
        rid = _next_id
        slot = [threading.Event(), None]
        _pending[rid] = slot
    try:
        send(dict(msg, id=rid))
        slot[0].wait(wait_s)
        return slot[1]
    finally:
        with _state:
            _pending.pop(rid, None)


def write(job, owner, fence):
    """The protected write: asks the harness to write for `job` under the lock
    token `owner` (the value the lock put on its key) and `fence` (None for a
    lock without fences). Returns the `written` reply as a dict; its `outcome`
    is accepted, already-done, stale, not-found or error. No reply within
    WRITE_WAIT_S (or shutdown meanwhile) is an error with definite false: the
    write may have happened."""
    if not isinstance(owner, str) or not owner:
        raise ValueError("owner must be the lock's token as a non-empty string")
    reply = _request({"type": "write", "job": job, "owner": owner, "fence": fence}, WRITE_WAIT_S)
    if reply is None:
        return {"type": "written", "outcome": "error", "definite": False,
                "detail": f"no written reply within {WRITE_WAIT_S:g} s"}
    return reply


def next_fence():
    """The next fence from the durable store (`fence_source: store`).
    Raises RuntimeError when the harness answers an error or does not answer."""
    reply = _request({"type": "next-fence"}, FENCE_WAIT_S)
    if reply is None:
        raise RuntimeError(f"no fence reply within {FENCE_WAIT_S:g} s")
    if reply.get("error") is not None or not isinstance(reply.get("fence"), int):
        raise RuntimeError(f"next-fence failed: {reply.get('error', reply)}")
    return reply["fence"]


def report_for_write(reply, lost_on_release=None):
    """Maps a `written` reply (and what release said) to a (report, detail)
    pair the protocol's way. `lost_on_release` is the library's exception when
    release said the lease had already gone: the write was accepted, but the
    lock itself says the job did not hold it to the end. A team using the
    library as documented sees that exception after its write, so its job
    does not count as a success: the adapter reports ownership-lost ("the
    lock says it lost the lease") with the accepted write named in the
    detail, rather than hide the library's own signal behind `success`."""
    outcome = reply.get("outcome")
    if outcome == "accepted":
        if lost_on_release is not None:
            return ("ownership-lost",
                    f"write accepted, then release said the lease was gone: {describe(lost_on_release)}")
        return "success", "write accepted"
    if outcome == "already-done":
        return "already-done", "the job was applied before"
    if outcome == "stale":
        return "ownership-lost", f"write refused as stale (last fence {reply.get('last_fence')})"
    if outcome == "not-found":
        return "failed", "the resource was not found"
    return "failed", f"write error (definite={reply.get('definite')}): {reply.get('detail', '')}"


def describe(error):
    """An exception as short detail text (some libraries put whole clients in theirs)."""
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= 300 else text[:300] + "..."


def redis_client(init, **kwargs):
    """The redis-py client for the worker's Redis path, with `kwargs` (socket
    timeouts, say) for its connections.

    Without `init["sentinel"]`: `redis.Redis.from_url(init["redis"]["url"])`.
    With it (the servers fail over by Sentinel): the client redis-py documents
    for Sentinel, `Sentinel(sentinels).master_for(master_name)`, which asks
    the sentinels where the master is whenever it connects. Sentinel answers
    with the node's real address; the harness's routes translate it to this
    worker's own path to that node, so its faults still reach the worker. An
    address no route knows is an error, never dialled (that would bypass
    the faults). Each question to a sentinel waits at most the scenario's
    `op_timeout_ms`."""
    import redis
    from redis.sentinel import MasterNotFoundError, Sentinel

    sentinel = init.get("sentinel")
    if not sentinel:
        return redis.Redis.from_url(init["redis"]["url"], **kwargs)
    routes = {route["from"]: route["to"] for route in sentinel["routes"]}

    def host_port(address):
        host, _, port = address.rpartition(":")
        return host, int(port)

    class RoutedSentinel(Sentinel):
        def discover_master(self, service_name):
            host, port = super().discover_master(service_name)
            to = routes.get(f"{host}:{port}")
            if to is None:
                raise MasterNotFoundError(
                    f"Sentinel named {host}:{port} as the master, which no route of this worker leads to")
            return host_port(to)

    # Questions to Sentinel are bounded by the scenario's per-operation
    # timeout, whatever the data connections wait (a blocking lock's socket
    # timeout may be many seconds).
    op_s = init["lock"]["op_timeout_ms"] / 1000
    manager = RoutedSentinel([host_port(a) for a in sentinel["sentinels"]],
                             sentinel_kwargs={"socket_timeout": op_s, "socket_connect_timeout": op_s})
    return manager.master_for(sentinel["master_name"], **kwargs)


def work(msg):
    """The job's work: sleep `work_ms` while holding the lock."""
    time.sleep(msg["work_ms"] / 1000.0)


def _check_job(msg):
    for field, kind in (("job", str), ("resource", str), ("work_ms", int)):
        value = msg.get(field)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ProtocolError(f"job message without a valid {field!r}: {json.dumps(msg)[:200]}")
    if msg["work_ms"] < 0:
        raise ProtocolError(f"job {msg['job']!r} has a negative work_ms")


def _run_job(job_fn, context, msg):
    try:
        report, detail = job_fn(context, msg)
        if report not in REPORTS:
            report, detail = "failed", f"adapter bug: unknown report {report!r} ({detail})"
    except Exception as e:  # the job flow failed: fail closed
        log.exception("job %s failed", msg["job"])
        report, detail = "failed", f"{type(e).__name__}: {e}"
    finally:
        with _state:
            _jobs.pop(threading.current_thread(), None)
    try:
        send({"type": "done", "job": msg["job"], "report": report, "detail": str(detail)})
    except OSError:  # the harness went away; nothing left to tell
        pass


def _dispatch_reply(msg):
    rid = msg.get("id")
    if not isinstance(rid, int) or isinstance(rid, bool):
        raise ProtocolError(f"{msg['type']} without an integer id")
    with _state:
        slot = _pending.get(rid)
        issued = 0 < rid <= _next_id
        if slot is not None:
            slot[1] = msg
            slot[0].set()
            return
    if not issued:
        raise ProtocolError(f"{msg['type']} for id {rid}, which was never sent")
    # A late reply to a request whose wait already ended: it was reported
    # as indeterminate; nothing waits for it now.
    log.warning("late %s for id %s ignored", msg["type"], rid)


def _read_line(stream, lineno):
    raw = stream.readline(LINE_MAX + 1)
    if not raw:
        return None
    if len(raw) > LINE_MAX and not raw.endswith(b"\n"):
        raise ProtocolError(f"line {lineno} is over {LINE_MAX} bytes")
    try:
        msg = json.loads(raw)
    except ValueError as e:
        raise ProtocolError(f"line {lineno} is not JSON: {e}") from None
    if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
        raise ProtocolError(f"line {lineno} is not a message with a type")
    return msg


def _exit(code):
    """Stops: wakes every waiting request, lets running jobs end briefly, exits."""
    _stopping.set()
    with _state:
        for slot in _pending.values():
            slot[0].set()
        running = list(_jobs)
    deadline = time.monotonic() + SHUTDOWN_GRACE_S
    for thread in running:
        thread.join(max(0.0, deadline - time.monotonic()))
    sys.stderr.flush()
    os._exit(code)  # library threads (renewers, pools) must not hold the exit


def _fail(message):
    try:
        send({"type": "error", "message": message})
    except OSError:
        pass
    log.error("%s", message)
    _exit(2)


def run(library, setup, job_fn, fences=False, library_label=None):
    """The protocol loop; never returns. `library` is the distribution name
    whose installed version `ready` reports; `setup(init)` returns the context
    passed to every `job_fn(context, job_message)`, which returns a
    (report, detail) pair. A `setup` that raises ValueError refuses the
    configuration with an `error` message."""
    stdin = sys.stdin.buffer
    try:
        init = _read_line(stdin, 1)
        if init is None:
            _exit(0)
        if init["type"] != "init":
            raise ProtocolError(f"first line is a {init['type']!r} message, not init")
        if init.get("protocol") != PROTOCOL:
            raise ProtocolError(f"protocol {init.get('protocol')!r} is not spoken here (only {PROTOCOL})")
        if not isinstance(init.get("lock"), dict) or not isinstance(init.get("redis"), dict):
            raise ProtocolError("init without lock or redis settings")
        try:
            context = setup(init)
        except (ValueError, KeyError, TypeError) as e:
            raise ProtocolError(f"cannot run with this init: {e}") from None
        send({"type": "ready", "protocol": PROTOCOL, "library": library_label or library,
              "library_version": importlib.metadata.version(library), "fences": fences})
        lineno = 1
        while True:
            lineno += 1
            msg = _read_line(stdin, lineno)
            if msg is None or msg["type"] == "shutdown":
                _exit(0)
            kind = msg["type"]
            if kind == "job":
                _check_job(msg)
                with _state:
                    busy = len(_jobs) >= MAX_JOBS
                if busy:
                    send({"type": "done", "job": msg["job"], "report": "failed",
                          "detail": f"{MAX_JOBS} jobs already running"})
                    continue
                thread = threading.Thread(target=_run_job, args=(job_fn, context, msg),
                                          name=f"job-{msg['job']}", daemon=True)
                with _state:
                    _jobs[thread] = msg["job"]
                thread.start()
            elif kind in ("written", "fence"):
                _dispatch_reply(msg)
            elif kind == "error":
                log.error("harness error: %s", msg.get("message"))
                _exit(2)
            else:
                raise ProtocolError(f"line {lineno} has unknown type {kind!r}")
    except ProtocolError as e:
        _fail(str(e))
    except (BrokenPipeError, OSError) as e:
        log.error("protocol channel broke: %s", e)
        _exit(2)
