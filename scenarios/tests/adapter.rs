//! Lock adapters on real servers: the reference library and three Python
//! libraries, each a process of its own speaking the adapter protocol
//! (docs/adapter-protocol.md), judged from what reached Redis and
//! PostgreSQL.
//!
//! - Every shipped adapter passes the conformance check, and an adapter
//!   that lies (writes without holding, reports success without a write,
//!   writes the table itself) fails it: truth is the servers', not the
//!   adapter's word.
//! - The reference adapter passes every scenario an adapter runs.
//! - A pause is `SIGSTOP` of the whole process: the reference adapter's
//!   stale write is refused by its fence; redis-py's and
//!   python-redis-lock's (whose renewal thread stops with it) are accepted
//!   with no fence to stop them — the verdict a team acts on.
//! - A crash is `SIGKILL`: the crashed worker sends nothing more, and no
//!   adapter process outlives its run.
//! - Under Sentinel an adapter follows the promotion through its own paths.
//!
//! Run under scripts/with-services (servers) with the adapters'
//! environment made by scripts/adapters (this test runs it, and builds the
//! reference adapter):
//! `bash scripts/with-services cargo test -p redfence-scenarios --test adapter`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use redfence_scenarios::adapter::conformance::check_adapter;
use redfence_scenarios::adapter::AdapterProtocol;
use redfence_scenarios::catalog;
use redfence_scenarios::protocol::Protocol;
use redfence_scenarios::real_world::RealWorlds;
use redfence_scenarios::run::{run_one, RunRecord};
use redfence_scenarios::{FenceOutcome, Property, Status};

/// Real runs share two cores and their timing matters: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

fn worlds() -> RealWorlds {
    RealWorlds::local_from_env().unwrap_or_else(|e| panic!("{e} (run under scripts/with-services)"))
}

/// The adapters' Python, from scripts/adapters (which makes the venv once).
fn python() -> String {
    let out = Command::new("bash")
        .arg(root().join("scripts/adapters"))
        .output()
        .expect("running scripts/adapters");
    assert!(
        out.status.success(),
        "scripts/adapters failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The reference adapter's binary, built if needed.
fn reference_binary() -> String {
    let status = Command::new(env!("CARGO"))
        .args(["build", "-q", "-p", "redfence-adapter-reference"])
        .current_dir(root())
        .status()
        .expect("running cargo build");
    assert!(status.success(), "building the reference adapter failed");
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root().join("target"));
    let binary = target.join("debug/redfence-reference-adapter");
    assert!(binary.is_file(), "{} was not built", binary.display());
    binary.display().to_string()
}

fn python_adapter(name: &str, file: &str) -> AdapterProtocol {
    let script = root().join("adapters/python").join(file);
    AdapterProtocol::new(name, vec![python(), script.display().to_string()])
}

fn reference_adapter() -> AdapterProtocol {
    AdapterProtocol::new("reference-adapter", vec![reference_binary()])
}

/// A Python adapter written for one test: `body` runs after the helper is
/// imported as `rf`; the file lives in a folder of its own, removed when
/// this drops. The folder is a local run folder as the reaper knows them
/// (its prefix, an owner file naming this process), so when a test run is
/// killed before the drop, the next local start removes it and says so.
struct ScriptAdapter {
    dir: PathBuf,
    adapter: AdapterProtocol,
}

impl ScriptAdapter {
    fn new(name: &str, body: &str) -> Self {
        use redfence_chaos::reaper::{own_identity, LOCAL_FOLDER_PREFIX, OWNER_FILE};
        let dir = std::env::temp_dir().join(format!(
            "{LOCAL_FOLDER_PREFIX}adapter-{name}-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        // Written whole or not at all, as the local provider does: another
        // suite's start reads it to decide whether this folder is a dead
        // run's, and an empty one names no live process.
        let partial = dir.join("owner.partial");
        std::fs::write(&partial, own_identity()).unwrap();
        std::fs::rename(&partial, dir.join(OWNER_FILE)).unwrap();
        let file = dir.join(format!("{}.py", name.replace('-', "_")));
        let lib = root().join("adapters/python").display().to_string();
        std::fs::write(
            &file,
            format!(
                "import sys\nsys.path.insert(0, {lib:?})\nimport redfence_adapter as rf\n{body}"
            ),
        )
        .unwrap();
        let adapter = AdapterProtocol::new(name, vec![python(), file.display().to_string()]);
        Self { dir, adapter }
    }
}

impl Drop for ScriptAdapter {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The `setup` of the one-off redis-py adapters: a client built by the
/// helper (Sentinel-aware, per-operation timeouts), and the lock settings.
const REDIS_PY_SETUP: &str = r#"
def setup(init):
    lock = init["lock"]
    op_s = lock["op_timeout_ms"] / 1000
    return rf.redis_client(init, socket_timeout=op_s, socket_connect_timeout=op_s), lock
"#;

/// `adapter`'s conformance check, one real run at a time, and the names
/// of the checks that failed.
fn conformance_of(
    adapter: &AdapterProtocol,
) -> (
    redfence_scenarios::adapter::conformance::Conformance,
    Vec<&'static str>,
) {
    let conformance = {
        let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        check_adapter(&worlds(), adapter)
    };
    let failed = conformance
        .checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| c.name)
        .collect();
    (conformance, failed)
}

fn run(scenario: &str, adapter: &AdapterProtocol, seed: u64) -> RunRecord {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let scenario = catalog::by_name(scenario).expect("scenario in the catalog");
    let started = Instant::now();
    let record = run_one(
        &worlds(),
        scenario.as_ref(),
        Arc::new(adapter.clone()),
        seed,
    );
    eprintln!(
        "{} × {} seed {seed}: {:.1} s\n  {}",
        record.scenario,
        record.protocol,
        started.elapsed().as_secs_f64(),
        summary(&record)
    );
    record
}

fn summary(record: &RunRecord) -> String {
    let mut lines = Vec::new();
    if let Some(error) = &record.error {
        lines.push(format!("error: {error}"));
    }
    for verdict in &record.verdicts {
        lines.push(format!(
            "{}: {:?} — {}",
            verdict.property.name(),
            verdict.status,
            verdict.explanation
        ));
    }
    lines.join("\n  ")
}

fn status(record: &RunRecord, property: Property) -> Status {
    record
        .verdicts
        .iter()
        .find(|v| v.property == property)
        .map(|v| v.status)
        .expect("every property is judged")
}

/// No process of an adapter is left: each one the runs started was
/// reaped and unregistered.
fn assert_no_adapter_left(adapter: &AdapterProtocol) {
    let program = &adapter.argv()[adapter.argv().len() - 1];
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(program.as_str()))
        .collect();
    assert!(left.is_empty(), "adapter processes left: {left:?}");
}

#[test]
fn every_shipped_adapter_conforms() {
    let adapters = [
        reference_adapter(),
        python_adapter("redis-py-lock", "redis_py_lock.py"),
        python_adapter("python-redis-lock", "python_redis_lock_adapter.py"),
        python_adapter("pottery-redlock", "pottery_redlock.py"),
    ];
    for adapter in &adapters {
        let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let conformance = check_adapter(&worlds(), adapter);
        let report: Vec<String> = conformance
            .checks
            .iter()
            .map(|c| {
                format!(
                    "{} {}: {}",
                    if c.passed { "ok" } else { "FAIL" },
                    c.name,
                    c.detail
                )
            })
            .collect();
        eprintln!("{}:\n  {}", adapter.name(), report.join("\n  "));
        assert!(conformance.passed(), "{}: {report:#?}", adapter.name());
        assert_eq!(conformance.checks.len(), 5);
        let library = adapter
            .problems()
            .library()
            .expect("ready named its library");
        assert_eq!(library.fences, adapter.name() == "reference-adapter");
        assert_no_adapter_left(adapter);
    }
}

/// An adapter that takes no lock, writes under a token of its own making
/// and reports success: the servers show it never held the key, so the
/// conformance check fails — and the verdicts say what it did.
#[test]
fn a_lying_adapter_fails_conformance() {
    let liar = ScriptAdapter::new(
        "liar",
        r#"
def setup(init):
    return None

def job(ctx, msg):
    reply = rf.write(msg["job"], "trust-me", None)
    return "success", "I held the lock, honestly"

if __name__ == "__main__":
    rf.run("redis", setup, job, fences=False, library_label="liar")
"#,
    );
    let (conformance, failed) = conformance_of(&liar.adapter);
    assert!(
        failed.contains(&"acquires on the key init names, with its token on the wire")
            && failed.contains(&"writes under the token it holds"),
        "{:#?}",
        conformance.checks
    );
    // Its writes were accepted (there is no fence to refuse them), and the
    // properties name what that means.
    let first = &conformance.runs[0];
    assert_eq!(
        status(first, Property::FailClosed),
        Status::Violated,
        "{}",
        summary(first)
    );
}

/// An adapter that takes the lock properly but then writes the protected
/// row itself, over the PostgreSQL path it was given, instead of asking the
/// harness: the database logs the change anyway (the deferred trigger of
/// core/migrations/0002), under an owner no lock held, so the write is
/// judged as one made without the lock.
#[test]
fn an_adapter_writing_around_the_harness_is_still_judged() {
    // The adapter writes with psql, which scripts/with-services installs
    // with PostgreSQL.
    let psql = Command::new("psql").arg("--version").output();
    assert!(
        psql.is_ok_and(|out| out.status.success()),
        "this test needs psql on PATH (Debian: postgresql-client; scripts/with-services installs it)"
    );
    let around = ScriptAdapter::new(
        "around",
        r#"import subprocess

def setup(init):
    lock = init["lock"]
    op_s = lock["op_timeout_ms"] / 1000
    client = rf.redis_client(init, socket_timeout=op_s, socket_connect_timeout=op_s)
    return client, lock, init["postgres"]["url"]

def job(ctx, msg):
    client, s, url = ctx
    lock = client.lock(s["key"], timeout=s["lease_ms"] / 1000,
                       blocking_timeout=s["acquire_deadline_ms"] / 1000)
    if not lock.acquire():
        return "retry-later", "not acquired"
    try:
        sql = ("INSERT INTO shared_resources (id, value) VALUES (:'res', 'written around') "
               "ON CONFLICT (id) DO UPDATE SET value = EXCLUDED.value;")
        subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-v", "res=" + msg["resource"], url],
                       input=sql, text=True, check=True, capture_output=True, timeout=10)
    finally:
        lock.release()
    return "success", "wrote the row myself"

if __name__ == "__main__":
    rf.run("redis", setup, job, fences=False, library_label="writes around the harness")
"#,
    );
    let (conformance, failed) = conformance_of(&around.adapter);
    assert!(
        failed.contains(&"writes under the token it holds"),
        "{:#?}",
        conformance.checks
    );
    let first = &conformance.runs[0];
    let store = first.history.as_ref().unwrap().store_truth.clone().unwrap();
    assert!(
        store
            .iter()
            .any(|r| r.outcome == FenceOutcome::Accepted && r.owner.starts_with("unguarded: ")),
        "the database logged the writes made around the harness: {store:?}"
    );
    let verdict = first
        .verdicts
        .iter()
        .find(|v| v.property == Property::FailClosed)
        .unwrap();
    assert_eq!(verdict.status, Status::Violated, "{}", summary(first));
    assert!(
        verdict.explanation.contains("unguarded"),
        "{}",
        verdict.explanation
    );
}

#[test]
fn the_reference_adapter_refuses_the_stale_write_after_a_real_sigstop() {
    let adapter = reference_adapter();
    let record = run("stale-worker-pause", &adapter, 0);
    assert!(record.error.is_none(), "{}", summary(&record));
    assert!(record.violated().is_empty(), "{}", summary(&record));
    // The paused process woke after its successor wrote, and its write
    // reached the store and was refused by its fence.
    assert_eq!(
        status(&record, Property::StaleOwnerRejected),
        Status::Held,
        "{}",
        summary(&record)
    );
    let store = record
        .history
        .as_ref()
        .unwrap()
        .store_truth
        .clone()
        .unwrap();
    assert!(
        store.iter().any(|r| r.outcome == FenceOutcome::Stale),
        "a stale write was refused: {store:?}"
    );
    for property in [
        Property::NoOverlappingHolders,
        Property::UnlockSafety,
        Property::FenceOrder,
    ] {
        assert_ne!(
            status(&record, property),
            Status::Undecided,
            "{}",
            summary(&record)
        );
    }
    assert_no_adapter_left(&adapter);
}

#[test]
fn the_reference_adapter_survives_a_sigkill_crash() {
    let adapter = reference_adapter();
    let record = run("crash-after-acquire", &adapter, 0);
    assert!(record.error.is_none(), "{}", summary(&record));
    assert!(record.violated().is_empty(), "{}", summary(&record));
    // The crash happened; that its SIGKILL ended the process is checked by
    // the runner (a process still running after it is the run's error,
    // asserted none above), and the crashed worker sent nothing after it.
    let history = record.history.as_ref().expect("a history");
    let crash = history
        .faults
        .iter()
        .find(|f| f.crash)
        .expect("the scenario crashed a worker");
    let crashed = crash.worker.as_deref().expect("a crashed worker");
    let after: Vec<_> = history
        .ops
        .iter()
        .filter(|op| op.worker == crashed && op.invoke_ms > crash.at_ms)
        .collect();
    assert!(
        after.is_empty(),
        "{crashed} went on after its crash at {} ms: {after:?}",
        crash.at_ms
    );
    // The harness killed it: not a problem of the adapter's (which
    // would be the run's error).
    assert_no_adapter_left(&adapter);
}

/// The reference library behind the protocol passes every scenario an
/// adapter runs (all but `concurrent-jobs`), with every property it
/// judges decided from the servers.
#[test]
fn the_reference_adapter_passes_every_scenario() {
    use redfence_scenarios::names::scenario::{ALL, CONCURRENT_JOBS};
    let adapter = reference_adapter();
    for scenario in ALL.iter().filter(|s| **s != CONCURRENT_JOBS) {
        let record = run(scenario, &adapter, 0);
        assert!(record.error.is_none(), "{scenario}: {}", summary(&record));
        assert!(
            record.violated().is_empty(),
            "{scenario}: {}",
            summary(&record)
        );
        assert!(
            record
                .verdicts
                .iter()
                .all(|v| v.status != Status::Undecided),
            "{scenario}: {}",
            summary(&record)
        );
    }
    assert_no_adapter_left(&adapter);
}

/// redis-py's `Lock` has no fence and no renewal: after a pause past its
/// lease, its write lands after its successor's and the store accepts it.
/// python-redis-lock renews from a thread, but `SIGSTOP` stops that thread
/// too, so it fails the same way. (pottery is left out: whether it writes
/// stale depends on where the pause lands. The pause fires when Redis shows
/// its token on the key; if that is before pottery has checked its
/// Redlock validity against the `SET`'s reply — a loaded machine — the
/// check finds the lease spent, pottery lets the key go and acquires again
/// after its successor, and no stale write happens. The next test covers
/// how that second acquire is read.)
#[test]
fn python_locks_without_fences_accept_the_stale_write_after_a_pause() {
    for adapter in [
        python_adapter("redis-py-lock", "redis_py_lock.py"),
        python_adapter("python-redis-lock", "python_redis_lock_adapter.py"),
    ] {
        let record = run("stale-worker-pause", &adapter, 0);
        assert!(record.error.is_none(), "{}", summary(&record));
        let verdict = record
            .verdicts
            .iter()
            .find(|v| v.property == Property::UnfencedStaleWrite)
            .unwrap();
        assert_eq!(verdict.status, Status::Violated, "{}", summary(&record));
        assert!(
            verdict.explanation.contains("no fence to stop it"),
            "{}",
            verdict.explanation
        );
        assert_no_adapter_left(&adapter);
    }
}

/// A lock that gets the key, decides its lease is already spent, lets it
/// go and takes it again under a fresh token inside the same job — what
/// pottery's Redlock does when a stall between its `SET` and the reply's
/// handling eats the validity. The second `SET` is read off the wire as an
/// acquire (its token is new), so the write under it is judged as one made
/// under a lock; read as a command of the first lease, `fail-closed` would
/// call it a write made without an acquire (a false alarm).
#[test]
fn a_lock_that_takes_the_key_again_under_a_new_token_is_read_as_acquiring() {
    let again = ScriptAdapter::new(
        "acquires-again",
        &[
            "import time\nfrom redis.exceptions import RedisError\n",
            REDIS_PY_SETUP,
            r#"
def take(client, s):
    lock = client.lock(s["key"], timeout=s["lease_ms"] / 1000,
                       blocking_timeout=s["acquire_deadline_ms"] / 1000)
    return lock if lock.acquire() else None

def job(ctx, msg):
    client, s = ctx
    first = take(client, s)
    if first is None:
        return "retry-later", "not acquired"
    # As if the lease were judged spent after a stall (pottery's validity
    # check after a pause): give it back, try again. The stall comes after
    # the harness saw the key held: a release sent at once could reach Redis
    # before the harness's read of the key, and the first take would then
    # read as contended.
    time.sleep(0.1)
    first.release()
    lock = take(client, s)
    if lock is None:
        return "retry-later", "not acquired the second time"
    lost = None
    try:
        rf.work(msg)
        reply = rf.write(msg["job"], lock.local.token.decode(), None)
    finally:
        try:
            lock.release()
        except RedisError as e:
            lost = e
    return rf.report_for_write(reply, lost)

if __name__ == "__main__":
    rf.run("redis", setup, job, fences=False, library_label="redis-py, taking the key twice")
"#,
        ]
        .concat(),
    );
    let record = run("mutual-exclusion", &again.adapter, 0);
    assert!(record.error.is_none(), "{}", summary(&record));
    assert!(record.violated().is_empty(), "{}", summary(&record));
    let ops = &record.history.as_ref().expect("a history").ops;
    let acquired = |owner: &str| {
        ops.iter().any(|op| {
            op.kind == redfence_scenarios::OpKind::Acquire
                && op.owner.as_deref() == Some(owner)
                && matches!(
                    op.outcome,
                    redfence_scenarios::Outcome::Ok(redfence_scenarios::OkValue::Acquired { .. })
                )
        })
    };
    let written: Vec<&str> = ops
        .iter()
        .filter(|op| matches!(op.kind, redfence_scenarios::OpKind::Write { .. }))
        .filter_map(|op| op.owner.as_deref())
        .collect();
    assert!(!written.is_empty(), "no write: {}", summary(&record));
    let unseen: Vec<&&str> = written.iter().filter(|o| !acquired(o)).collect();
    assert!(
        unseen.is_empty(),
        "writes under tokens never seen acquiring: {unseen:?}"
    );
    // Every job took the key twice, under two tokens, both read as acquires.
    let acquires = ops
        .iter()
        .filter(|op| {
            op.kind == redfence_scenarios::OpKind::Acquire
                && matches!(
                    op.outcome,
                    redfence_scenarios::Outcome::Ok(redfence_scenarios::OkValue::Acquired { .. })
                )
        })
        .count();
    assert!(
        acquires >= 2 * written.len(),
        "{acquires} acquisitions seen for {} writes",
        written.len()
    );
    assert_no_adapter_left(&again.adapter);
}

/// With Sentinel deciding the failover (`REDFENCE_FAILOVER=sentinel`), an
/// adapter follows the master the way a deployed client does — it asks
/// Sentinel — and dials the route `init` gives for the address Sentinel
/// names, so after the promotion its traffic still goes through its own
/// tap and fault proxy. Checked for the reference adapter and for redis-py
/// through the Python helper (`redfence_adapter.redis_client`): Sentinel
/// marked the primary down and promoted the replica; after that, the
/// worker's acquire was seen on its tap (the wire is the only place an
/// adapter's op is recorded) with a token the promoted node then held; and
/// the reference passes.
///
/// The redis-py job flow here waits out a failover (it retries a refused
/// acquire until its deadline): the shipped `redis_py_lock.py` fails a job
/// at once while Sentinel names no master, and its 24 jobs are used up
/// before Sentinel promotes, so no job of it would be left to show the way
/// to the promoted node.
#[test]
fn adapters_follow_a_sentinel_failover_through_their_own_paths() {
    let mut config = redfence_chaos::ChaosConfig::local_from_env().expect("config");
    config.failover = redfence_chaos::FailoverKind::Sentinel;
    let worlds = RealWorlds::new(config);
    let scenario = catalog::by_name("failover-counter-regression").expect("in the catalog");
    let patient = ScriptAdapter::new(
        "redis-py-patient",
        &[
            "import time\nfrom redis.exceptions import ConnectionError, RedisError\n",
            REDIS_PY_SETUP,
            r#"
def job(ctx, msg):
    client, s = ctx
    deadline = time.monotonic() + s["acquire_deadline_ms"] / 1000
    while True:
        lock = client.lock(s["key"], timeout=s["lease_ms"] / 1000,
                           blocking_timeout=max(0.01, deadline - time.monotonic()))
        try:
            if lock.acquire():
                break
            return "retry-later", "not acquired in time"
        except ConnectionError as e:
            if time.monotonic() >= deadline:
                return "failed", f"acquire: {rf.describe(e)}"
            time.sleep(0.05)
    try:
        rf.work(msg)
        reply = rf.write(msg["job"], lock.local.token.decode(), None)
    finally:
        try:
            lock.release()
        except RedisError:
            pass
    return rf.report_for_write(reply)

if __name__ == "__main__":
    rf.run("redis", setup, job, fences=False, library_label="redis-py, waiting out a failover")
"#,
        ]
        .concat(),
    );
    for adapter in [reference_adapter(), patient.adapter.clone()] {
        let record = {
            let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
            run_one(&worlds, scenario.as_ref(), Arc::new(adapter.clone()), 0)
        };
        let name = adapter.name();
        eprintln!("{name} with Sentinel:\n  {}", summary(&record));
        assert!(record.error.is_none(), "{name}: {}", summary(&record));
        let history = record.history.as_ref().expect("a history");
        let said: Vec<&str> = history
            .server_events
            .iter()
            .map(|e| e.what.as_str())
            .collect();
        assert!(
            said.iter().any(|w| w.contains("+odown"))
                && said.iter().any(|w| w.contains("promoted redis-replica")),
            "{name}: Sentinel did not fail over: {said:?}"
        );
        let failover_at = history
            .faults
            .iter()
            .find(|f| f.fault == redfence_scenarios::world::Fault::FailOver)
            .expect("the failover fault")
            .at_ms;
        // Sets on the promoted node after the failover: the lock taken
        // there (before it, that node's records are what it replicated).
        let truth = history.redis_truth.as_ref().expect("the Redis truth");
        let promoted_holders: Vec<&str> = truth
            .iter()
            .filter(|r| r.at_ms >= failover_at && r.server == redfence_sim::world::REPLICA_HOST)
            .filter_map(|r| match &r.change {
                redfence_scenarios::OwnershipChange::Set { owner } => Some(owner.as_str()),
                _ => None,
            })
            .collect();
        let acquired_after: Vec<&str> = history
            .ops
            .iter()
            .filter(|op| {
                op.kind == redfence_scenarios::OpKind::Acquire
                    && op.invoke_ms > failover_at
                    && op
                        .owner
                        .as_deref()
                        .is_some_and(|o| promoted_holders.contains(&o))
            })
            .map(|op| op.worker.as_str())
            .collect();
        assert!(
            !acquired_after.is_empty(),
            "{name}: no acquire seen on a worker's tap after the failover at {failover_at} ms \
             took the lock on the promoted node"
        );
        if name == "reference-adapter" {
            assert!(record.violated().is_empty(), "{}", summary(&record));
        }
        assert_no_adapter_left(&adapter);
    }
}
