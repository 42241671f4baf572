//! Scenarios against real Redis and PostgreSQL (`RealWorlds`, local
//! processes behind the embedded Toxiproxy): the reference violates nothing
//! and every property is decided — Redis's ownership log comes from each
//! node's `MONITOR` recording re-executed through the simulated engine —
//! and the shipped mutants are caught as in the simulation, by the store's
//! fence log and by the recorded Redis log.
//!
//! Run under scripts/with-services, which installs and points at the
//! server binaries:
//! `bash scripts/with-services cargo test -p redfence-scenarios --test real_world`.
//! Runs take real time (a 1 s lease is a real second), so each test runs a
//! couple of scenario runs, one test at a time.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redfence_core::{ResourceName, WriteOutcome};
use redfence_scenarios::catalog;
use redfence_scenarios::protocol::Protocol;
use redfence_scenarios::protocols::{self, Reference};
use redfence_scenarios::real_world::RealWorlds;
use redfence_scenarios::run::{run_one, RunRecord, WorldFactory, WorldSpec};
use redfence_scenarios::world::{Fault, WorkerEnv, WorldError, WorldKind};
use redfence_scenarios::{FenceOutcome, Property, Status};

/// Real runs share two CPU cores and their timing matters (leases, 150 ms
/// operation timeouts): one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn worlds() -> RealWorlds {
    RealWorlds::local_from_env().unwrap_or_else(|e| panic!("{e} (run under scripts/with-services)"))
}

fn run(scenario: &str, protocol: Arc<dyn Protocol>, seed: u64) -> RunRecord {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let scenario = catalog::by_name(scenario).expect("scenario in the catalog");
    let started = Instant::now();
    let record = run_one(&worlds(), scenario.as_ref(), protocol, seed);
    eprintln!(
        "{} × {} seed {seed}: {:.1} s, {}",
        record.scenario,
        record.protocol,
        started.elapsed().as_secs_f64(),
        summary(&record)
    );
    assert_eq!(record.world, WorldKind::Real);
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

/// The reference on real servers: no error, nothing violated, nothing
/// undecided — the recorded Redis log decides what the simulation's log
/// decides — and the rest held, except what the run gave nothing to judge:
/// a stale write only where a worker wrote stale, a write without a fence
/// never (the reference fences every write).
fn assert_reference_passes(record: &RunRecord) {
    assert!(record.error.is_none(), "{}", summary(record));
    assert!(record.violated().is_empty(), "{}", summary(record));
    for verdict in &record.verdicts {
        let expected: &[Status] = match verdict.property {
            Property::StaleOwnerRejected => &[Status::Held, Status::NotExercised],
            Property::UnfencedStaleWrite => &[Status::NotExercised],
            // Only hotspot-load bounds contention.
            Property::Contention => &[Status::Held, Status::NotExercised],
            // No renew is confirmed and no key expires in a short, clean
            // run; no write happens where every job fails closed.
            Property::RenewalSafety
            | Property::UnlockSafety
            | Property::NoOverlappingHolders
            | Property::FailClosed => &[Status::Held, Status::NotExercised],
            _ => &[Status::Held],
        };
        assert!(
            expected.contains(&verdict.status),
            "{}: {}",
            verdict.property.name(),
            summary(record)
        );
    }
    let history = record.history.as_ref().expect("a judged run has a history");
    let redis = history
        .redis_truth
        .as_ref()
        .unwrap_or_else(|| panic!("a recorded Redis log: {:?}", history.redis_truth_gap));
    assert!(
        redis.iter().any(|r| r.server == "redis"),
        "the primary's recording shows the lock's holders: {redis:?}"
    );
    let store = history.store_truth.as_ref().expect("postgres's fence log");
    assert!(!store.is_empty(), "the store logged the writes");
}

#[test]
fn mutual_exclusion_reference() {
    for seed in 0..2 {
        let record = run("mutual-exclusion", Arc::new(Reference), seed);
        // Not asserted: that all nine jobs got through. Real runs have real
        // 150 ms operation timeouts, and a loaded machine may time a write
        // out (fail closed), which is no violation.
        assert_reference_passes(&record);
    }
}

/// The reference passes on every real seed, and its fence refuses the stale
/// write on at least [`REFUSED_SEEDS_MIN`] of them.
///
/// Why not on every seed: on real servers a successor can fail closed (a
/// Redis or PostgreSQL call past its 150 ms timeout on a loaded machine)
/// and never take a fence; the paused worker's write is then the newest
/// and rightly accepted. Seen once in the real-suite loop while release
/// builds loaded both cores: 3 fences for 4 workers, 2 writes accepted,
/// every property held. The runs without a refusal are printed whole when
/// too few refuse.
#[test]
fn stale_worker_pause_reference() {
    /// Real seeds tried before the refusal is called missing.
    const REAL_SEEDS_MAX: u64 = 5;
    /// Seeds whose stale write must be refused (the test asked 2 of 2
    /// before).
    const REFUSED_SEEDS_MIN: usize = 2;
    let mut refused = 0;
    let mut without = Vec::new();
    for seed in 0..REAL_SEEDS_MAX {
        let record = run("stale-worker-pause", Arc::new(Reference), seed);
        assert_reference_passes(&record);
        if record.metrics.fence_rejections >= 1 {
            refused += 1;
            if refused == REFUSED_SEEDS_MIN {
                return;
            }
        } else {
            without.push(format!(
                "seed {seed}: {}\n  metrics: {:?}\ntimeline:\n{}",
                summary(&record),
                record.metrics,
                record
                    .history
                    .as_ref()
                    .map(redfence_scenarios::timeline::timeline)
                    .unwrap_or_default()
            ));
        }
    }
    panic!(
        "a stale write was refused on {refused} of {REAL_SEEDS_MAX} real seeds, fewer than \
         {REFUSED_SEEDS_MIN}; the runs without one:\n{}",
        without.join("\n")
    );
}

#[test]
fn stale_worker_pause_catches_no_fence_check() {
    let mutant = protocols::by_name("no-fence-check").expect("shipped mutant");
    let record = run("stale-worker-pause", mutant, 0);
    assert!(
        record.violated().contains(&Property::FenceOrder),
        "{}",
        summary(&record)
    );
}

/// The world's own mechanics, without a scenario: a worker's paths, the
/// unchecked store path, peek, crash, a partition, the store's truth on
/// the world's clock, and a fault the layout cannot take.
#[test]
fn world_paths_faults_and_truth() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let spec = WorldSpec {
        seed: 0,
        workers: 2,
        replica: false,
        masters: 1,
        lease_ms: 1_000,
        latency_ms: (1, 3),
        duration_ms_max: 10_000,
        op_timeout_ms: 150,
    };
    let mut world = worlds().build(&spec).expect("a real world");
    assert_eq!(world.kind(), WorldKind::Real);
    assert_eq!(world.workers(), 2);

    // Worker 0 sets a key, writes through the unchecked store path (first
    // to a resource that does not exist), then works until it is crashed.
    let writes: Arc<Mutex<Vec<WriteOutcome>>> = Arc::default();
    let seen = writes.clone();
    let job = move |env: WorkerEnv| -> redfence_scenarios::world::WorkerFuture {
        Box::pin(async move {
            let mut redis = env.redis.clone();
            let _: () = redis::cmd("SET")
                .arg("probe-key")
                .arg(&env.name)
                .query_async(&mut redis)
                .await
                .expect("SET through the proxy");
            let missing = env
                .raw_store
                .write_unchecked("nowhere", 7, "o7", None, "x")
                .await
                .expect("unchecked write");
            let name = ResourceName::new("probe").expect("name");
            env.store.ensure_resource(&name).await.expect("ensure");
            let written = env
                .raw_store
                .write_unchecked("probe", 7, "o7", Some("job-7"), "x")
                .await
                .expect("unchecked write");
            assert_eq!(env.raw_store.read_fence("probe").await.expect("read"), 7);
            seen.lock().expect("lock").extend([missing, written]);
            tokio::time::sleep(Duration::from_secs(60)).await;
        })
    };
    world.spawn_worker(0, Box::new(job)).expect("spawn w0");
    let deadline_ms = world.now_ms() + 5_000;
    // Bounded by the deadline.
    while world.peek("probe-key").expect("peek").is_none() && world.now_ms() < deadline_ms {
        world.run_for(5).expect("run");
    }
    assert_eq!(
        world.peek("probe-key").expect("peek").as_deref(),
        Some("w0")
    );
    // Bounded by the deadline.
    while writes.lock().expect("lock").len() < 2 && world.now_ms() < deadline_ms {
        world.run_for(5).expect("run");
    }
    assert_eq!(
        *writes.lock().expect("lock"),
        [WriteOutcome::NotFound, WriteOutcome::Accepted]
    );
    assert!(!world.worker_done(0).expect("w0"));
    world.inject(&Fault::CrashWorker(0)).expect("crash");
    assert!(
        world.worker_done(0).expect("w0"),
        "a crashed worker is done"
    );

    // Worker 1, cut off from Redis, gets a definite failure (refused), not
    // a hang; after the heal its next request goes through.
    world.inject(&Fault::PartitionRedis(1)).expect("partition");
    let results: Arc<Mutex<Vec<bool>>> = Arc::default();
    let seen = results.clone();
    let job = move |env: WorkerEnv| -> redfence_scenarios::world::WorkerFuture {
        Box::pin(async move {
            let mut redis = env.redis.clone();
            let cut: redis::RedisResult<Option<String>> = redis::cmd("GET")
                .arg("probe-key")
                .query_async(&mut redis)
                .await;
            seen.lock()
                .expect("lock")
                .push(cut.is_err_and(|e| e.is_connection_refusal()));
            // Wait (bounded) for the heal, signalled by the key changing.
            for _ in 0..500 {
                let got: redis::RedisResult<Option<String>> = redis::cmd("GET")
                    .arg("healed")
                    .query_async(&mut redis)
                    .await;
                if got.is_ok() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            seen.lock().expect("lock").push(true);
        })
    };
    world.spawn_worker(1, Box::new(job)).expect("spawn w1");
    world.run_for(300).expect("run");
    assert_eq!(*results.lock().expect("lock"), [true], "refused while cut");
    world.inject(&Fault::HealRedis(1)).expect("heal");
    let deadline_ms = world.now_ms() + 5_000;
    // Bounded by the deadline.
    while !world.worker_done(1).expect("w1") && world.now_ms() < deadline_ms {
        world.run_for(10).expect("run");
    }
    assert!(
        world.worker_done(1).expect("w1"),
        "w1 got through after the heal"
    );

    let truth = world.truth("lock:probe", "probe").expect("truth");
    assert_eq!(
        truth.redis,
        Some(Vec::new()),
        "recorded, and no lock key was ever set ({:?})",
        truth.redis_gap
    );
    let log = truth.store.expect("postgres's fence log");
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(
        (log[0].fence, log[0].outcome, log[0].job_id.as_deref()),
        (7, FenceOutcome::Accepted, Some("job-7"))
    );
    assert!(
        log[0].at_ms <= world.now_ms(),
        "on the world's clock: {log:?}"
    );

    let refused = world.inject(&Fault::FailOver).unwrap_err();
    assert!(
        matches!(refused, WorldError::Unsupported { .. }),
        "no replica asked for: {refused}"
    );
}

/// Promised catches the real world cannot show the way the simulation does,
/// each investigated (see the sim-vs-real agreement table, `redfence agree`):
///
/// - `stale-worker-pause` × `app-side-fence-check`: the pause lands between
///   the fence read's two round trips (sqlx's extended protocol; the
///   simulated store answers in one), and on waking the read's own timeout
///   has run out, so the write is never sent. A real process paused there
///   behaves the same; the catch comes from `crash-before-ack` instead.
/// - `crash-mid-mutation` × `no-fence-check`: whether the write in flight
///   reached PostgreSQL before the crash is up to the kernel; when it did
///   not, nothing is applied twice. The simulation decides it by seed.
/// - `lost-acquire-reply` × `no-ttl`: the scenario drops worker 0's replies
///   once its first job has reported, 50 ms before its second acquire. On
///   real servers installing the fault (the embedded proxy restarts) and
///   the stage noticing the report took 78 ms in the run investigated, so
///   the second acquire was answered before the replies vanished: no
///   acquire ended unknown, no key was left without a TTL, nothing to
///   catch. The simulation injects the fault in the same step. Arming a
///   reply drop on a phase, as pauses are, would close it.
/// - `hotspot-load` × `fixed-backoff`: the contention bounds are numbers
///   measured on the simulation's timing (a 10 ms tick); on loopback a hold
///   is a few milliseconds and a 10 ms retry loop costs far fewer attempts,
///   so the same bounds do not separate it there. Bounds for real servers
///   would be measured on the deployment's own network.
const REAL_DIFFERENCES: [(&str, &str); 4] = [
    ("stale-worker-pause", "app-side-fence-check"),
    ("crash-mid-mutation", "no-fence-check"),
    ("lost-acquire-reply", "no-ttl"),
    ("hotspot-load", "fixed-backoff"),
];

/// Most seeds a promised catch gets on real servers before it is missed.
const REAL_SEEDS_PER_CATCH_MAX: u64 = 3;

/// Every scenario of the catalog on real servers, unchanged: the reference
/// passes each with every property decided, and every promised catch
/// happens, as in the simulation, within a few seeds (a run takes
/// seconds), but for the differences listed above.
#[test]
fn every_scenario_on_real_servers() {
    for scenario in catalog::all() {
        let record = run(scenario.name(), Arc::new(Reference), 0);
        assert_reference_passes(&record);
    }
    let decidable = redfence_scenarios::mutation::CATCHES
        .iter()
        .filter(|c| !REAL_DIFFERENCES.contains(&(c.scenario, c.mutant)));
    // Every catch is run before any is judged, so one run shows them all.
    // Real timing varies from run to run (where a pause armed on a phase
    // lands among a release's round trips, say), so a catch may take a
    // few seeds, as `redfence agree` counts "violated on some seed".
    let mut missed = Vec::new();
    for catch in decidable {
        let mutant = protocols::by_name(catch.mutant).expect("a shipped mutant");
        let mut record = run(catch.scenario, mutant.clone(), 0);
        let caught = |record: &RunRecord| {
            record
                .verdicts
                .iter()
                .any(|v| v.property == catch.property && v.status == Status::Violated)
        };
        for seed in 1..REAL_SEEDS_PER_CATCH_MAX {
            if caught(&record) {
                break;
            }
            record = run(catch.scenario, mutant.clone(), seed);
        }
        if !caught(&record) {
            missed.push(format!(
                "{} did not catch {} ({}) on real servers: {}",
                catch.scenario,
                catch.mutant,
                catch.property.name(),
                summary(&record)
            ));
        }
    }
    assert!(missed.is_empty(), "{}", missed.join("\n\n"));
}

/// Runs `commands` (each a command and its arguments) on worker `worker`'s
/// Redis path, in order, as its one job.
fn send(world: &mut dyn redfence_scenarios::world::World, worker: usize, commands: &[&[&str]]) {
    let commands: Vec<Vec<String>> = commands
        .iter()
        .map(|c| c.iter().map(|a| a.to_string()).collect())
        .collect();
    let done: Arc<Mutex<bool>> = Arc::default();
    let flag = done.clone();
    let job = move |env: WorkerEnv| -> redfence_scenarios::world::WorkerFuture {
        Box::pin(async move {
            let mut redis = env.redis.clone();
            for command in commands {
                let mut cmd = redis::cmd(&command[0]);
                for arg in &command[1..] {
                    cmd.arg(arg);
                }
                let _: redis::RedisResult<redis::Value> = cmd.query_async(&mut redis).await;
            }
            *flag.lock().expect("lock") = true;
        })
    };
    world.spawn_worker(worker, Box::new(job)).expect("spawn");
    let deadline_ms = world.now_ms() + 5_000;
    // Bounded by the deadline.
    while !*done.lock().expect("lock") && world.now_ms() < deadline_ms {
        world.run_for(5).expect("run");
    }
    assert!(*done.lock().expect("lock"), "the commands ran");
}

fn spec(workers: usize, replica: bool) -> WorldSpec {
    WorldSpec {
        seed: 0,
        workers,
        replica,
        masters: 1,
        lease_ms: 1_000,
        latency_ms: (1, 3),
        duration_ms_max: 10_000,
        op_timeout_ms: 150,
    }
}

/// The recorded Redis log follows what the real servers did: a script's
/// `SET … PX` starts a holding on the primary and, through replication, on
/// the replica; the lease expires at the server's deadline (nothing is
/// streamed then: the replay finds it); stopping the primary loses what it
/// held; and a failover's promoted replica keeps what it had received.
#[test]
fn the_recorded_redis_log_follows_the_real_servers() {
    use redfence_scenarios::history::OwnershipChange;
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let on = |log: &[redfence_scenarios::history::OwnershipRecord], server: &str| {
        log.iter()
            .filter(|r| r.server == server)
            .map(|r| (r.at_ms, r.change.clone()))
            .collect::<Vec<_>>()
    };
    let set = |o: &str| OwnershipChange::Set {
        owner: o.to_owned(),
    };
    let expired = |o: &str| OwnershipChange::Expired {
        owner: o.to_owned(),
    };
    let lost = |o: &str| OwnershipChange::Lost {
        owner: o.to_owned(),
    };
    let changes =
        |v: &[(u64, OwnershipChange)]| v.iter().map(|(_, c)| c.clone()).collect::<Vec<_>>();

    let mut world = worlds().build(&spec(2, true)).expect("a real world");
    let acquire = "redis.call('INCR', KEYS[2]) \
                   return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])";
    let t0 = world.now_ms();
    send(
        world.as_mut(),
        0,
        &[&["EVAL", acquire, "2", "lock:{p}", "fence:{p}", "a", "200"]],
    );
    world.run_for(400).expect("run");
    let t_b = world.now_ms();
    send(
        world.as_mut(),
        1,
        &[&["SET", "lock:{p}", "b", "PX", "60000"]],
    );
    // Let replication deliver `b` before the primary goes, then cut the
    // link: a replica that reconnects to its restarted primary does a full
    // resynchronisation no monitor shows, and a never-promoted replica whose
    // copy was replaced so is (rightly) left out of the log. Whether it
    // reconnects within the 50 ms below is a race (it retries once a
    // second); without the cut this test failed in CI when it won.
    world.run_for(100).expect("run");
    world.inject(&Fault::CutReplication).expect("cut");
    world.inject(&Fault::StopRedis).expect("stop");
    let t_stopped = world.now_ms();
    world.inject(&Fault::RestartRedis).expect("restart");
    world.run_for(50).expect("run");
    let truth = world.truth("lock:{p}", "p").expect("truth");
    let log = truth
        .redis
        .unwrap_or_else(|| panic!("a recorded log: {:?}", truth.redis_gap));
    let primary = on(&log, "redis");
    assert_eq!(
        changes(&primary),
        [set("a"), expired("a"), set("b"), lost("b")],
        "{log:?}"
    );
    let (set_a, expired_a) = (primary[0].0, primary[1].0);
    assert!(set_a >= t0 && set_a < t0 + 1_000, "{log:?}");
    assert_eq!(
        expired_a,
        set_a + 200,
        "expired at the server's deadline: {log:?}"
    );
    assert!(primary[2].0 >= t_b && primary[3].0 <= t_stopped, "{log:?}");
    assert_eq!(
        changes(&on(&log, "replica")),
        [set("a"), expired("a"), set("b")],
        "the replica applies what its primary sends: {log:?}"
    );
    drop(world);

    // A failover: the promoted replica holds what it had received.
    let mut world = worlds().build(&spec(1, true)).expect("a real world");
    send(
        world.as_mut(),
        0,
        &[
            &["SET", "lock:{p}", "c", "PX", "60000"],
            // Replicated before the failover.
            &["WAIT", "1", "2000"],
        ],
    );
    world.inject(&Fault::FailOver).expect("failover");
    let truth = world.truth("lock:{p}", "p").expect("truth");
    let log = truth
        .redis
        .unwrap_or_else(|| panic!("a recorded log: {:?}", truth.redis_gap));
    assert_eq!(
        changes(&on(&log, "redis")),
        [set("c"), lost("c")],
        "{log:?}"
    );
    assert_eq!(changes(&on(&log, "replica")), [set("c")], "{log:?}");
}

/// A replication cut freezes what the replica holds, and a script reads it
/// there (`World::peek_replica`, which `failover-counter-regression` uses
/// to check that its cut landed inside a holding); a restore brings the
/// replica level with the primary again, the same in both worlds. A world
/// without a replica refuses the read.
#[test]
fn a_cut_freezes_the_replica_and_a_restore_brings_it_level_in_both_worlds() {
    use redfence_scenarios::sim_world::SimWorlds;
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let factories: [(&str, Box<dyn WorldFactory>); 2] =
        [("sim", Box::new(SimWorlds)), ("real", Box::new(worlds()))];
    for (name, factory) in factories {
        let mut world = factory.build(&spec(3, true)).expect("a world");
        send(
            world.as_mut(),
            0,
            &[&["SET", "lock:{p}", "a", "PX", "60000"]],
        );
        world.run_for(100).expect("run");
        world.inject(&Fault::CutReplication).expect("cut");
        let replica = |world: &mut Box<dyn redfence_scenarios::world::World>| {
            world.peek_replica("lock:{p}").expect("peek the replica")
        };
        assert_eq!(replica(&mut world).as_deref(), Some("a"), "{name}");
        send(world.as_mut(), 1, &[&["DEL", "lock:{p}"]]);
        world.run_for(100).expect("run");
        assert_eq!(world.peek("lock:{p}").expect("peek"), None, "{name}");
        assert_eq!(
            replica(&mut world).as_deref(),
            Some("a"),
            "{name}: the cut kept the delete from the replica"
        );
        world.inject(&Fault::RestoreReplication).expect("restore");
        world.run_for(100).expect("run");
        assert_eq!(
            replica(&mut world),
            None,
            "{name}: the restored replica applied the delete"
        );
        send(
            world.as_mut(),
            2,
            &[&["SET", "lock:{p}", "c", "PX", "60000"]],
        );
        world.run_for(100).expect("run");
        assert_eq!(
            replica(&mut world).as_deref(),
            Some("c"),
            "{name}: the replica follows again"
        );
        drop(world);
        let mut alone = factory.build(&spec(1, false)).expect("a world");
        assert!(
            alone.peek_replica("lock:{p}").is_err(),
            "{name}: no replica, no read"
        );
    }
}

/// A restart that forgets, the same in both worlds: the primary takes a
/// snapshot while `a` holds the lock, `b` then overwrites it, and the
/// primary is killed and restarted from the snapshot. Real Redis
/// (snapshot-only persistence, `BGSAVE`, `kill -9`, start from `dump.rdb`)
/// and the simulated server give the same ownership log: `b`'s lock is
/// lost in the crash and `a` holds the lock again (the snapshot had it).
#[test]
fn a_restart_from_a_snapshot_forgets_the_same_lock_in_both_worlds() {
    use redfence_scenarios::history::OwnershipChange;
    use redfence_scenarios::sim_world::SimWorlds;
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let factories: [(&str, Box<dyn WorldFactory>); 2] =
        [("sim", Box::new(SimWorlds)), ("real", Box::new(worlds()))];
    let owner = |o: &str| o.to_owned();
    let expected = vec![
        OwnershipChange::Set { owner: owner("a") },
        OwnershipChange::Overwritten {
            from: owner("a"),
            to: owner("b"),
        },
        OwnershipChange::Lost { owner: owner("b") },
        OwnershipChange::Set { owner: owner("a") },
    ];
    for (name, factory) in factories {
        let mut world = factory.build(&spec(2, false)).expect("a world");
        send(
            world.as_mut(),
            0,
            &[&["SET", "lock:{p}", "a", "NX", "PX", "60000"]],
        );
        world.inject(&Fault::SnapshotRedis).expect("snapshot");
        send(
            world.as_mut(),
            1,
            &[&["SET", "lock:{p}", "b", "PX", "60000"]],
        );
        world.inject(&Fault::StopRedis).expect("stop");
        world.inject(&Fault::RestartRedis).expect("restart");
        world.run_for(50).expect("run");
        assert_eq!(
            world.peek("lock:{p}").expect("peek").as_deref(),
            Some("a"),
            "{name}: the restarted primary holds the snapshot's lock"
        );
        let truth = world.truth("lock:{p}", "p").expect("truth");
        let log = truth
            .redis
            .unwrap_or_else(|| panic!("{name}: a log: {:?}", truth.redis_gap));
        // The primary's own log (the real world's replica, which no
        // client uses here, keeps a log of its own).
        let changes: Vec<OwnershipChange> = log
            .into_iter()
            .filter(|r| r.server == "redis")
            .map(|r| r.change)
            .collect();
        assert_eq!(changes, expected, "{name}");
    }
}

/// A forward jump of the primary's clock ends a lease early by the jump, in
/// both worlds: the simulated server's clock moves; on a real server (whose
/// clock cannot be moved here) the jump's effect is emulated by cutting
/// every key's lifetime, and the fault's words say it is an emulation.
#[test]
fn a_redis_clock_jump_ends_a_lease_early_by_the_jump_in_both_worlds() {
    use redfence_scenarios::history::OwnershipChange;
    use redfence_scenarios::sim_world::SimWorlds;
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let factories: [(&str, Box<dyn WorldFactory>); 2] =
        [("sim", Box::new(SimWorlds)), ("real", Box::new(worlds()))];
    let jump = Fault::JumpRedisClock { jump_ms: 1_500 };
    for (name, factory) in factories {
        let mut world = factory.build(&spec(1, false)).expect("a world");
        let before_ms = world.now_ms();
        send(
            world.as_mut(),
            0,
            &[&["SET", "lock:{p}", "a", "NX", "PX", "2000"]],
        );
        world.run_for(100).expect("run");
        world.inject(&jump).expect("jump");
        assert_eq!(world.peek("lock:{p}").expect("peek").as_deref(), Some("a"));
        world.run_for(700).expect("run");
        assert_eq!(
            world.peek("lock:{p}").expect("peek"),
            None,
            "{name}: the 2,000 ms lease ended about 500 ms after it was set"
        );
        let words = world.fault_words(&jump);
        assert_eq!(
            words.contains("emulated"),
            name == "real",
            "{name}: {words}"
        );
        let truth = world.truth("lock:{p}", "p").expect("truth");
        let log = truth
            .redis
            .unwrap_or_else(|| panic!("{name}: a log: {:?}", truth.redis_gap));
        let primary: Vec<_> = log.into_iter().filter(|r| r.server == "redis").collect();
        assert_eq!(
            primary.iter().map(|r| r.change.clone()).collect::<Vec<_>>(),
            vec![
                OwnershipChange::Set {
                    owner: "a".to_owned()
                },
                OwnershipChange::Expired {
                    owner: "a".to_owned()
                },
            ],
            "{name}"
        );
        let (set_ms, expired_ms) = (primary[0].at_ms, primary[1].at_ms);
        assert!(set_ms >= before_ms, "{name}: {primary:?}");
        let held_ms = expired_ms - set_ms;
        assert!(
            (450..=650).contains(&held_ms),
            "{name}: held {held_ms} ms, not 2,000 − 1,500: {primary:?}"
        );
    }
}

/// A worker's own clock follows the worker clock faults in both worlds —
/// a step, then a drift — while the world's clock, which the harness
/// records by, stays true.
#[test]
fn a_worker_clock_jumps_and_drifts_in_both_worlds() {
    use redfence_scenarios::sim_world::SimWorlds;
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let factories: [(&str, Box<dyn WorldFactory>); 2] =
        [("sim", Box::new(SimWorlds)), ("real", Box::new(worlds()))];
    for (name, factory) in factories {
        let mut world = factory.build(&spec(2, false)).expect("a world");
        world
            .inject(&Fault::JumpWorkerClock {
                worker: 0,
                jump_ms: 5_000,
            })
            .expect("jump");
        world
            .inject(&Fault::DriftWorkerClock {
                worker: 1,
                drift_ppm: 500_000,
            })
            .expect("drift");
        // Each worker reads both clocks, 1,000 ms apart.
        let seen: Arc<Mutex<Vec<(usize, u64, u64)>>> = Arc::default();
        for worker in 0..2 {
            let seen = seen.clone();
            let job = move |env: WorkerEnv| -> redfence_scenarios::world::WorkerFuture {
                Box::pin(async move {
                    for _ in 0..2 {
                        let read = (env.index, env.clock.now_ms(), env.own_clock.now_ms());
                        seen.lock().expect("lock").push(read);
                        tokio::time::sleep(Duration::from_millis(1_000)).await;
                    }
                })
            };
            world.spawn_worker(worker, Box::new(job)).expect("spawn");
        }
        world.run_for(2_500).expect("run");
        let seen = seen.lock().expect("lock").clone();
        let of = |w: usize| -> Vec<(u64, u64)> {
            seen.iter()
                .filter(|(i, _, _)| *i == w)
                .map(|(_, world, own)| (*world, *own))
                .collect()
        };
        let (w0, w1) = (of(0), of(1));
        assert_eq!((w0.len(), w1.len()), (2, 2), "{name}: {seen:?}");
        for (world_ms, own_ms) in &w0 {
            assert_eq!(own_ms - world_ms, 5_000, "{name}: w0 stepped 5 s: {w0:?}");
        }
        let world_gap = w1[1].0 - w1[0].0;
        let own_gap = w1[1].1 - w1[0].1;
        assert!(
            own_gap * 2 >= world_gap * 3 - 10 && own_gap * 2 <= world_gap * 3 + 10,
            "{name}: w1 runs 1.5× fast: world {world_gap} ms, own {own_gap} ms"
        );
    }
}

/// `command` sent by worker `worker` on each of `masters` (its paths to
/// them, in that order); returns how many paths the worker had.
fn send_on_masters(
    world: &mut dyn redfence_scenarios::world::World,
    worker: usize,
    masters: &[usize],
    command: &[&str],
) -> usize {
    let command: Vec<String> = command.iter().map(|a| a.to_string()).collect();
    let masters = masters.to_vec();
    let done: Arc<Mutex<Option<usize>>> = Arc::default();
    let flag = done.clone();
    let job = move |env: WorkerEnv| -> redfence_scenarios::world::WorkerFuture {
        Box::pin(async move {
            for master in masters {
                let mut path = env.masters[master].clone();
                let mut cmd = redis::cmd(&command[0]);
                for arg in &command[1..] {
                    cmd.arg(arg);
                }
                let _: redis::RedisResult<redis::Value> = cmd.query_async(&mut path).await;
            }
            *flag.lock().expect("lock") = Some(env.masters.len());
        })
    };
    world.spawn_worker(worker, Box::new(job)).expect("spawn");
    let deadline_ms = world.now_ms() + 5_000;
    // Bounded by the deadline.
    while done.lock().expect("lock").is_none() && world.now_ms() < deadline_ms {
        world.run_for(5).expect("run");
    }
    let paths = *done.lock().expect("lock");
    paths.expect("the commands were sent in time")
}

/// Several independent masters, the same in both worlds: `a` takes the
/// lock on all three masters, master 2 takes a snapshot, `b` overwrites
/// the key on masters 1 and 2 (so `b` holds the majority), and master 2
/// alone is killed and restarted from its snapshot (which had `a`). Each
/// master's own log and the majority view agree between the simulation and
/// real servers: `a`'s majority, handed over to `b`, lost with master 2's
/// crash (one copy of three), `a`'s again once master 2 is back. In the
/// real world a peek from inside a worker answers what a strict majority
/// holds at each step.
#[test]
fn a_fault_on_one_master_of_three_gives_the_same_majority_view_in_both_worlds() {
    use redfence_history::majority::{majority_view, MAJORITY_SERVER};
    use redfence_scenarios::history::OwnershipChange;
    use redfence_scenarios::sim_world::SimWorlds;
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let spec = WorldSpec {
        masters: 3,
        ..spec(3, false)
    };
    let factories: [(&str, Box<dyn WorldFactory>); 2] =
        [("sim", Box::new(SimWorlds)), ("real", Box::new(worlds()))];
    let on_master = |master: usize, fault: Fault| Fault::OnMaster {
        master,
        fault: Box::new(fault),
    };
    let owner = |o: &str| o.to_owned();
    let (set, overwritten, lost) = (
        |o: &str| OwnershipChange::Set { owner: owner(o) },
        |from: &str, to: &str| OwnershipChange::Overwritten {
            from: owner(from),
            to: owner(to),
        },
        |o: &str| OwnershipChange::Lost { owner: owner(o) },
    );
    let masters: Vec<String> = ["redis", "redis-1", "redis-2"].map(String::from).to_vec();
    for (name, factory) in factories {
        let mut world = factory.build(&spec).expect("a world");
        assert_eq!(world.masters(), 3, "{name}");
        // Real world: worker 2 peeks (the whole-worker level's handle)
        // until told to stop; each fresh value is what it read after the
        // step before.
        let peeked: Arc<Mutex<Option<Option<String>>>> = Arc::default();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        if name == "real" {
            let peek = world.peeker(3);
            let (slot, stop) = (peeked.clone(), stop.clone());
            let job = move |_env: WorkerEnv| -> redfence_scenarios::world::WorkerFuture {
                Box::pin(async move {
                    /// Peeks the job makes at most (5 ms apart: ~20 s).
                    const PEEKS_MAX: usize = 4_000;
                    for _ in 0..PEEKS_MAX {
                        if stop.load(std::sync::atomic::Ordering::SeqCst) {
                            break;
                        }
                        let value = peek.get("lock:{p}").await;
                        *slot.lock().expect("lock") = Some(value);
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                })
            };
            world
                .spawn_worker(2, Box::new(job))
                .expect("spawn the peeker");
        }
        let majority_now = |world: &mut dyn redfence_scenarios::world::World| {
            *peeked.lock().expect("lock") = None;
            let deadline_ms = world.now_ms() + 2_000;
            // Bounded by the deadline.
            while peeked.lock().expect("lock").is_none() && world.now_ms() < deadline_ms {
                world.run_for(5).expect("run");
            }
            peeked.lock().expect("lock").clone().expect("a fresh peek")
        };

        let paths = send_on_masters(
            world.as_mut(),
            0,
            &[0, 1, 2],
            &["SET", "lock:{p}", "a", "NX", "PX", "60000"],
        );
        assert_eq!(paths, 3, "{name}: one path per master");
        world
            .inject(&on_master(2, Fault::SnapshotRedis))
            .expect("snapshot master 2");
        send_on_masters(
            world.as_mut(),
            1,
            &[1, 2],
            &["SET", "lock:{p}", "b", "PX", "60000"],
        );
        if name == "real" {
            assert_eq!(majority_now(world.as_mut()).as_deref(), Some("b"));
        }
        world
            .inject(&on_master(2, Fault::StopRedis))
            .expect("stop master 2");
        if name == "real" {
            assert_eq!(
                majority_now(world.as_mut()),
                None,
                "a on master 0, b on master 1: no majority"
            );
        }
        world
            .inject(&on_master(2, Fault::RestartRedis))
            .expect("restart master 2");
        world.run_for(50).expect("run");
        if name == "real" {
            assert_eq!(majority_now(world.as_mut()).as_deref(), Some("a"));
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            world.run_for(20).expect("run");
        }
        assert!(
            world
                .fault_words(&on_master(2, Fault::StopRedis))
                .contains("master 2"),
            "{name}: the words say which master"
        );

        let truth = world.truth("lock:{p}", "p").expect("truth");
        let log = truth
            .redis
            .unwrap_or_else(|| panic!("{name}: a log: {:?}", truth.redis_gap));
        let of = |server: &str| -> Vec<OwnershipChange> {
            log.iter()
                .filter(|r| r.server == server && r.key == "lock:{p}")
                .map(|r| r.change.clone())
                .collect()
        };
        assert_eq!(of("redis"), [set("a")], "{name}: master 0 untouched");
        assert_eq!(
            of("redis-1"),
            [set("a"), overwritten("a", "b")],
            "{name}: master 1"
        );
        assert_eq!(
            of("redis-2"),
            [set("a"), overwritten("a", "b"), lost("b"), set("a")],
            "{name}: master 2 crashed and came back from its snapshot"
        );
        let lock_log: Vec<_> = log.into_iter().filter(|r| r.key == "lock:{p}").collect();
        // A crashed master's copy counts for its holder until the master
        // comes back: here its snapshot's `a` replaces `b` at the restart.
        let view = majority_view(&lock_log, &masters, &[], 60_000);
        assert!(view.iter().all(|r| r.server == MAJORITY_SERVER));
        assert_eq!(
            view.into_iter().map(|r| r.change).collect::<Vec<_>>(),
            [set("a"), overwritten("a", "b"), overwritten("b", "a")],
            "{name}: the majority view"
        );
    }
}

/// The external provider's servers are not ours to add to: several masters
/// are refused before anything starts (no server is needed to see it).
#[test]
fn the_external_provider_refuses_several_masters_up_front() {
    let mut config = redfence_chaos::ChaosConfig::local_from_env().expect("config");
    config.provider = Some(redfence_chaos::ProviderKind::External);
    let spec = WorldSpec {
        masters: 3,
        ..spec(1, false)
    };
    match RealWorlds::new(config).build(&spec) {
        Err(WorldError::Unsupported { what, why }) => {
            assert_eq!(what, "3 Redis masters");
            assert!(why.contains("external"), "{why}");
        }
        Err(other) => panic!("refused for the wrong reason: {other}"),
        Ok(_) => panic!("the external provider cannot add masters"),
    }
}

/// A recording the replay cannot trust is no log: a command the engine
/// does not know (here `SADD`: the simulated server has no sets) makes the
/// Redis truth `None`, and the gap names it, so verdicts that needed the
/// log say why they are undecided.
#[test]
fn a_command_the_replay_cannot_run_is_a_named_gap() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut world = worlds().build(&spec(1, false)).expect("a real world");
    send(
        world.as_mut(),
        0,
        &[
            &["SET", "lock:{p}", "a", "PX", "5000"],
            &["SADD", "waiters", "a"],
        ],
    );
    let truth = world.truth("lock:{p}", "p").expect("truth");
    assert_eq!(truth.redis, None);
    let gap = truth.redis_gap.expect("a named gap");
    assert!(gap.contains("sadd"), "{gap}");
}

/// `failover-counter-regression` with Sentinel deciding the promotion
/// (`REDFENCE_FAILOVER=sentinel`), on local processes and on containers:
/// the reference still passes with every property decided, and the history
/// tells Sentinel's steps, in order, all before the failover was done.
#[test]
fn failover_counter_regression_with_sentinel() {
    let mut local = redfence_chaos::ChaosConfig::local_from_env().expect("config");
    local.failover = redfence_chaos::FailoverKind::Sentinel;
    let mut containers = redfence_chaos::ChaosConfig::containers_local_image();
    containers.failover = redfence_chaos::FailoverKind::Sentinel;
    let scenario = catalog::by_name("failover-counter-regression").expect("in the catalog");
    for (provider, config) in [("local", local), ("containers", containers)] {
        let worlds = RealWorlds::new(config);
        let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let record = run_one(&worlds, scenario.as_ref(), Arc::new(Reference), 0);
        eprintln!(
            "reference with Sentinel on {provider}: {}",
            summary(&record)
        );
        assert_reference_passes(&record);
        let history = record.history.as_ref().expect("a history");
        let said: Vec<&str> = history
            .server_events
            .iter()
            .map(|e| e.what.as_str())
            .collect();
        assert!(
            said.iter().any(|w| w.contains("+odown")),
            "{provider}: {said:?}"
        );
        assert!(
            said.iter()
                .any(|w| w.contains("promoted redis-replica") && w.contains("replication offset")),
            "{provider}: {said:?}"
        );
        let failover_at = history
            .faults
            .iter()
            .find(|f| f.fault == Fault::FailOver)
            .expect("the failover fault")
            .at_ms;
        // The failover fault is recorded once it is done: once Sentinel had
        // promoted the replica. Its steps came in order before that.
        let times: Vec<u64> = history.server_events.iter().map(|e| e.at_ms).collect();
        assert!(
            times.windows(2).all(|w| w[0] <= w[1]) && times.iter().all(|t| *t <= failover_at),
            "{provider}: Sentinel's steps out of order or after the failover ended at \
             {failover_at} ms: {:?}",
            history.server_events
        );
    }
}

/// Redlock over three real masters, as over five (the agreement command's
/// default): each of the four Redlock scenarios gives the same verdicts on
/// real servers as in the simulation for the unfenced and the fenced
/// Redlock — a stale write accepted after a pause, an (emulated) clock
/// jump and a restart from a snapshot for the first, nothing for the
/// second — and the quorum one short writes without holding on the
/// minority side.
///
/// Why a catch may take several real seeds: it needs the real schedule to
/// fall as the simulated one does (the minority worker's `SET` on master 0
/// before its rival's, 30 ms apart). On a machine loaded past its cores
/// (load ≈ 4.4: a release build beside two real-suite loops) real seed 0 of
/// `redlock-minority-partition` × `redlock-half-quorum` once held every
/// property: the minority worker never wrote (2 accepted writes, each after
/// a completed acquire). `redfence agree` judges a cell over its seeds the
/// same way ("violated on some seed"). What may vary is only whether the
/// catch happened: every real seed tried must violate nothing beyond what
/// the simulation violates, and a cell that must hold is judged on seed 0.
#[test]
fn redlock_at_three_real_masters_agrees_with_the_simulation() {
    use redfence_scenarios::catalog::{
        RedlockClockJump, RedlockMasterRestart, RedlockMinorityPartition, RedlockPause,
    };
    use redfence_scenarios::protocols::{Redlock, RedlockFenced, RedlockHalfQuorum};
    use redfence_scenarios::scenario::Scenario;
    use redfence_scenarios::sim_world::SimWorlds;
    /// Real seeds tried before a catch is called missing.
    const REAL_SEEDS_MAX: u64 = 3;
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let violated = |record: &RunRecord| -> Vec<Property> {
        record
            .verdicts
            .iter()
            .filter(|v| v.status == Status::Violated)
            .map(|v| v.property)
            .collect()
    };
    let scenarios: [Box<dyn Scenario>; 4] = [
        Box::new(RedlockClockJump::with_masters(3)),
        Box::new(RedlockMasterRestart::with_masters(3)),
        Box::new(RedlockPause::with_masters(3)),
        Box::new(RedlockMinorityPartition::with_masters(3)),
    ];
    for scenario in &scenarios {
        let minority = scenario.name() == "redlock-minority-partition";
        let mut cells: Vec<(Arc<dyn Protocol>, Vec<Property>)> = vec![
            (
                Arc::new(Redlock),
                if minority {
                    vec![]
                } else {
                    vec![Property::UnfencedStaleWrite]
                },
            ),
            (Arc::new(RedlockFenced), vec![]),
        ];
        if minority {
            cells.push((Arc::new(RedlockHalfQuorum), vec![Property::FailClosed]));
        }
        for (protocol, expected) in cells {
            let sim = run_one(&SimWorlds, scenario.as_ref(), protocol.clone(), 0);
            assert_eq!(
                violated(&sim),
                expected,
                "sim {} × {}: {}",
                scenario.name(),
                protocol.name(),
                summary(&sim)
            );
            // A cell that must hold is judged on seed 0; a catch on the
            // first of up to REAL_SEEDS_MAX seeds that shows it.
            let seeds = if expected.is_empty() {
                1
            } else {
                REAL_SEEDS_MAX
            };
            let mut tried = Vec::new();
            let mut agreed = false;
            for seed in 0..seeds {
                let real = run_one(&worlds(), scenario.as_ref(), protocol.clone(), seed);
                assert_eq!(real.world, WorldKind::Real);
                assert!(real.error.is_none(), "{}", summary(&real));
                let real_violated = violated(&real);
                assert!(
                    real_violated.iter().all(|p| expected.contains(p)),
                    "real {} × {} seed {seed} violated {real_violated:?}, the simulation \
                     only {expected:?}: {}",
                    scenario.name(),
                    protocol.name(),
                    summary(&real)
                );
                tried.push(format!("seed {seed}: {}", summary(&real)));
                if real_violated == expected {
                    agreed = true;
                    break;
                }
            }
            assert!(
                agreed,
                "real {} × {}: the simulation violates {expected:?}, the real world did on \
                 none of {seeds} seed(s)\n{}",
                scenario.name(),
                protocol.name(),
                tried.join("\n")
            );
        }
    }
}

/// The two cells that disagreed at three seeds: a Redis outage and a
/// failover that left the real world no work after them (the real outage
/// lasted a second longer; a real job is shorter than a simulated one, so
/// the failover fell on a later job). Now the stopped server's paths refuse
/// at once and the failover's workload is closed a fixed time after it:
/// both worlds acquire after the fault, and `set-without-nx` is caught the
/// same way in both.
///
/// Why several real seeds: the catch needs two workers to want the lock at
/// once after the fault. The simulation's seed 0 is fixed, but on real
/// servers the jobs drift by round trips, and a run can see the two workers
/// take turns instead (measured: real seed 0 held every property on one of
/// four runs of this test, with 6 writes). The agreement table judges a
/// cell over its seeds in the same way; work after the fault is asserted on
/// every run.
#[test]
fn work_goes_on_after_an_outage_and_a_failover_in_both_worlds() {
    use redfence_scenarios::history::{OkValue, OpKind, Outcome};
    use redfence_scenarios::protocols::SetWithoutNx;
    use redfence_scenarios::sim_world::SimWorlds;
    /// Real seeds tried before the catch is called missing.
    const REAL_SEEDS_MAX: u64 = 5;
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cells = [
        (
            "redis-unavailable",
            Fault::RestartRedis,
            Property::NoOverlappingHolders,
        ),
        (
            "failover-counter-regression",
            Fault::FailOver,
            Property::FenceUniqueness,
        ),
    ];
    // The number of acquisitions after the fault, and whether `caught` was
    // violated.
    let judge = |record: &RunRecord, name: &str, fault: &Fault, caught: Property| {
        let world = record.world;
        assert!(record.error.is_none(), "{world:?}: {}", summary(record));
        let history = record.history.as_ref().expect("a history");
        let fault_at = history
            .faults
            .iter()
            .find(|f| f.fault == *fault)
            .unwrap_or_else(|| panic!("{world:?} {name}: no {fault:?}"))
            .at_ms;
        let acquired_after = history
            .ops
            .iter()
            .filter(|op| op.kind == OpKind::Acquire && op.invoke_ms >= fault_at)
            .filter(|op| matches!(op.outcome, Outcome::Ok(OkValue::Acquired { .. })))
            .count();
        assert!(
            acquired_after >= 2,
            "{world:?} {name}: {acquired_after} acquisitions after the fault at \
             {fault_at} ms\n  {}",
            summary(record)
        );
        let verdict = record
            .verdicts
            .iter()
            .find(|v| v.property == caught)
            .expect("judged");
        verdict.status == Status::Violated
    };
    for (name, fault, caught) in cells {
        let scenario = catalog::by_name(name).expect("in the catalog");
        let sim = run_one(&SimWorlds, scenario.as_ref(), Arc::new(SetWithoutNx), 0);
        assert!(
            judge(&sim, name, &fault, caught),
            "sim {name}: {caught:?} not violated\n  {}",
            summary(&sim)
        );
        let mut misses = Vec::new();
        let caught_on_real = (0..REAL_SEEDS_MAX).any(|seed| {
            let real = run_one(&worlds(), scenario.as_ref(), Arc::new(SetWithoutNx), seed);
            let hit = judge(&real, name, &fault, caught);
            if !hit {
                misses.push(format!("seed {seed}: {}", summary(&real)));
            }
            hit
        });
        assert!(
            caught_on_real,
            "real {name}: {caught:?} held on {REAL_SEEDS_MAX} seeds\n{}",
            misses.join("\n")
        );
    }
}
