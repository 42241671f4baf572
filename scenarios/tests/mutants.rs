//! Each mutant against a small script that triggers exactly its bug, in the
//! deterministic simulation.
//!
//! Why both ways: a mutant test that only asserts "violated" passes with a
//! checker that flags everything, and one that only runs the reference
//! passes with a checker that flags nothing. So every test runs its script
//! with the mutant (the property meant to catch it must be `Violated`) and
//! with the reference on the same seed (the same property must not be
//! violated: `Held`, or `NotExercised` where the reference never got into
//! the situation the property judges — it never wrote stale, say), and
//! both runs must reach every point the script aims at. Scripts aim
//! their faults at protocol phases, or at the lock key appearing on Redis,
//! so they catch on the first seed; [`SEEDS_MAX`] is slack, not a search.
//!
//! The scripts are the scenario catalog's ideas cut down to one bug each;
//! they run through the harness's own `run_one`, as the catalog does.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use redfence_core::{FenceSourceKind, ResourceName};
use redfence_scenarios::catalog::{jobs, plan, reach, settle};
use redfence_scenarios::driver::{JobSpec, Phase};
use redfence_scenarios::protocol::Protocol;
use redfence_scenarios::protocols::{
    AppSideFenceCheck, DelUnlock, GetThenDel, LockBeforeFence, NoFenceCheck, NoTtl,
    RedisCounterFences, Reference, RenewWithoutOwnerCheck, SetnxThenExpire, StaticOwner,
    UnboundedRenewal, UnfencedSetNx,
};
use redfence_scenarios::run::{run_one, RunRecord, RESOURCE};
use redfence_scenarios::scenario::{Scenario, ScenarioError, Setup};
use redfence_scenarios::sim_world::SimWorlds;
use redfence_scenarios::stage::Stage;
use redfence_scenarios::world::{Fault, WorkerEnv, WorkerFuture};
use redfence_scenarios::{Property, Status, Verdict};

/// Most seeds one test tries before it declares the mutant uncaught.
const SEEDS_MAX: u64 = 3;

/// Bound on waiting for the lock key to appear.
const LOCKED_MS_MAX: u64 = 5_000;

type Run = fn(&mut Stage<'_>, &Setup) -> Result<(), ScenarioError>;

/// A test script as a scenario, so the harness runs it exactly as it runs
/// the catalog.
struct Script {
    name: &'static str,
    setup: Setup,
    run: Run,
}

impl Scenario for Script {
    fn name(&self) -> &'static str {
        self.name
    }

    fn describe(&self) -> &'static str {
        "a focused script that triggers one mutant's bug"
    }

    fn targets(&self) -> &'static [Property] {
        &[]
    }

    fn setup(&self) -> Setup {
        self.setup.clone()
    }

    fn run(&self, stage: &mut Stage<'_>) -> Result<(), ScenarioError> {
        (self.run)(stage, &self.setup)
    }
}

fn verdict(record: &RunRecord, property: Property) -> &Verdict {
    record
        .verdicts
        .iter()
        .find(|v| v.property == property)
        .expect("one verdict per property")
}

/// A run whose script reached every point it aims at.
fn run(script: &Script, protocol: Arc<dyn Protocol>, seed: u64) -> RunRecord {
    let record = run_one(&SimWorlds, script, protocol, seed);
    assert!(
        record.error.is_none(),
        "{} with {} on seed {seed}: {}",
        script.name,
        record.protocol,
        record.error.as_deref().unwrap_or_default()
    );
    record
}

/// Runs `script` with `mutant` until every one of `properties` is violated,
/// then asserts the reference violates none of them on that seed.
fn caught(mutant: Arc<dyn Protocol>, properties: &[Property], script: &Script) {
    let started = Instant::now();
    let mut missed: Vec<String> = Vec::new();
    for seed in 0..SEEDS_MAX {
        let record = run(script, mutant.clone(), seed);
        let verdicts: Vec<&Verdict> = properties.iter().map(|&p| verdict(&record, p)).collect();
        if let Some(v) = verdicts.iter().find(|v| v.status != Status::Violated) {
            missed.push(format!(
                "seed {seed}: {} {:?}: {}",
                v.property.name(),
                v.status,
                v.explanation
            ));
            continue;
        }
        let reference = run(script, Arc::new(Reference), seed);
        for &property in properties {
            let v = verdict(&reference, property);
            assert!(
                matches!(v.status, Status::Held | Status::NotExercised),
                "the reference must not violate {} under the script that catches {} (seed \
                 {seed}): {:?}: {}",
                property.name(),
                mutant.name(),
                v.status,
                v.explanation
            );
        }
        let end_ms = record.history.as_ref().map_or(0, |h| h.end_ms);
        eprintln!(
            "{} caught by {} on seed {seed} ({end_ms} ms simulated; {} ms wall for both runs)",
            mutant.name(),
            script.name,
            started.elapsed().as_millis()
        );
        for v in verdicts {
            eprintln!("  {}: {}", v.property.name(), v.explanation);
        }
        return;
    }
    panic!(
        "{} was not caught by {} in {SEEDS_MAX} seeds:\n{}",
        mutant.name(),
        script.name,
        missed.join("\n")
    );
}

/// One job with an explicit id (a redelivered job shares its id).
fn job(job_id: &str, work_ms: u64) -> Vec<JobSpec> {
    vec![JobSpec {
        job_id: job_id.to_owned(),
        work_ms,
    }]
}

/// Long enough after the workers for a lock with a lease to have expired
/// and one without to have outlived max hold + lease + tolerance.
fn outlive_bound(stage: &mut Stage<'_>, setup: &Setup) -> Result<(), ScenarioError> {
    let bound_ms = setup.hold_ms_max + setup.lease_ms + setup.tolerance_ms();
    Ok(stage.run_for(bound_ms + 500)?)
}

// ---- late unlock: a worker's release or renewal after its lease ended ----

/// w0 is paused mid-job past its lease; it wakes (its work done) while w1
/// holds the lock, writes, and releases: its release meets w1's lock.
fn paused_past_lease_then_release(
    stage: &mut Stage<'_>,
    setup: &Setup,
) -> Result<(), ScenarioError> {
    stage.spawn(0, plan(setup, jobs(0, 1, 600), 0))?;
    stage.spawn(1, plan(setup, jobs(1, 1, 2_000), 50))?;
    reach(stage, 0, Phase::Holding)?;
    stage.fault(Fault::PauseWorker(0))?;
    reach(stage, 1, Phase::Holding)?;
    stage.fault(Fault::ResumeWorker(0))?;
    settle(stage)
}

#[test]
fn del_unlock_deletes_the_successors_lock() {
    let script = Script {
        name: "paused-past-lease-then-release",
        setup: Setup::default(),
        run: paused_past_lease_then_release,
    };
    caught(Arc::new(DelUnlock), &[Property::UnlockSafety], &script);
}

/// w0 is paused the moment its release begins (its first command is on the
/// wire, the answer not yet read) and wakes while w1 holds the lock.
fn paused_inside_release(stage: &mut Stage<'_>, setup: &Setup) -> Result<(), ScenarioError> {
    stage.spawn(0, plan(setup, jobs(0, 1, 200), 0))?;
    stage.spawn(1, plan(setup, jobs(1, 1, 2_000), 50))?;
    reach(stage, 0, Phase::Releasing)?;
    stage.fault(Fault::PauseWorker(0))?;
    reach(stage, 1, Phase::Holding)?;
    stage.fault(Fault::ResumeWorker(0))?;
    settle(stage)
}

#[test]
fn get_then_del_deletes_the_successors_lock_between_get_and_del() {
    let script = Script {
        name: "paused-inside-release",
        setup: Setup::default(),
        run: paused_inside_release,
    };
    caught(Arc::new(GetThenDel), &[Property::UnlockSafety], &script);
}

/// w0 is paused mid-job past its lease and wakes, still working, while w1
/// holds the lock; w1 then dies, so that nothing but w0's renewals can keep
/// w1's key alive past w1's own lease, and its expiry shows it.
fn paused_past_lease_then_renew(stage: &mut Stage<'_>, setup: &Setup) -> Result<(), ScenarioError> {
    stage.spawn(0, plan(setup, jobs(0, 1, 2_800), 0))?;
    stage.spawn(1, plan(setup, jobs(1, 1, 2_000), 50))?;
    reach(stage, 0, Phase::Holding)?;
    stage.fault(Fault::PauseWorker(0))?;
    reach(stage, 1, Phase::Holding)?;
    stage.fault(Fault::CrashWorker(1))?;
    stage.fault(Fault::ResumeWorker(0))?;
    reach(stage, 0, Phase::Done)?;
    Ok(stage.run_for(setup.lease_ms + 500)?)
}

#[test]
fn renew_without_owner_check_extends_the_successors_lock() {
    let script = Script {
        name: "paused-past-lease-then-renew",
        setup: Setup::default(),
        run: paused_past_lease_then_renew,
    };
    caught(
        Arc::new(RenewWithoutOwnerCheck),
        &[Property::RenewalSafety],
        &script,
    );
}

// ---- stale writers: only the store's fence check can stop them ----

/// w0 is paused mid-job past its lease; w1 takes over and does the same
/// (redelivered) job to the end; then w0 wakes and writes.
fn stale_worker_pause(stage: &mut Stage<'_>, setup: &Setup) -> Result<(), ScenarioError> {
    stage.spawn(0, plan(setup, job("job-1", 300), 0))?;
    stage.spawn(1, plan(setup, job("job-1", 200), 50))?;
    reach(stage, 0, Phase::Holding)?;
    stage.fault(Fault::PauseWorker(0))?;
    reach(stage, 1, Phase::Done)?;
    stage.fault(Fault::ResumeWorker(0))?;
    settle(stage)
}

#[test]
fn no_fence_check_accepts_the_stale_write() {
    let script = Script {
        name: "stale-worker-pause",
        setup: Setup::default(),
        run: stale_worker_pause,
    };
    caught(
        Arc::new(NoFenceCheck),
        &[
            Property::FenceOrder,
            Property::StaleOwnerRejected,
            Property::ExactlyOnce,
        ],
        &script,
    );
}

#[test]
fn unfenced_set_nx_has_its_stale_write_accepted_and_says_the_data_is_corrupted() {
    let script = Script {
        name: "stale-worker-pause",
        setup: Setup::default(),
        run: stale_worker_pause,
    };
    let property = Property::UnfencedStaleWrite;
    let mut missed = Vec::new();
    for seed in 0..SEEDS_MAX {
        let record = run(&script, Arc::new(UnfencedSetNx), seed);
        let v = verdict(&record, property);
        if v.status != Status::Violated {
            missed.push(format!("seed {seed}: {:?}: {}", v.status, v.explanation));
            continue;
        }
        eprintln!("unfenced-set-nx caught on seed {seed}: {}", v.explanation);
        assert!(
            v.explanation.starts_with("stale write accepted at ")
                && v.explanation.contains(" by w0 (owner ")
                && v.explanation.contains("after its lease ended at ")
                && v.explanation.contains("no fence to stop it")
                && v.explanation.contains("the data is corrupted"),
            "{}",
            v.explanation
        );
        // The lock has no fences: the fence properties had nothing to judge,
        // and none of them is blamed for what the missing fence let through.
        for p in [
            Property::FenceOrder,
            Property::StaleOwnerRejected,
            Property::FenceUniqueness,
        ] {
            assert_eq!(verdict(&record, p).status, Status::NotExercised, "{p}");
        }
        // Nor is it framed as a failure to fail closed: every write followed
        // a successful acquire. (The redelivered job applied twice is the
        // plain store's missing idempotency check: exactly-once.)
        assert_eq!(verdict(&record, Property::FailClosed).status, Status::Held);
        assert_eq!(
            record.violated(),
            [property, Property::ExactlyOnce],
            "{:?}",
            record.violated()
        );
        // The reference on the same seed: fenced, so this property does not
        // apply to it, and nothing is violated.
        let reference = run(&script, Arc::new(Reference), seed);
        assert_eq!(verdict(&reference, property).status, Status::NotExercised);
        assert!(!reference.failed(), "{:?}", reference.violated());
        return;
    }
    panic!("unfenced-set-nx was not caught:\n{}", missed.join("\n"));
}

#[test]
fn unfenced_set_nx_without_a_pause_is_exercised_and_holds() {
    // No false alarm: with no pause every write lands inside its lease.
    let script = Script {
        name: "contend",
        setup: Setup::default(),
        run: contend,
    };
    let record = run(&script, Arc::new(UnfencedSetNx), 0);
    let v = verdict(&record, Property::UnfencedStaleWrite);
    assert_eq!(v.status, Status::Held, "{}", v.explanation);
    assert!(!record.failed(), "{:?}", record.violated());
}

/// w0 is paused the moment its write begins (for a two-step write, the read
/// of the store's fence is on the wire); w1 takes over and writes; w0 wakes.
fn paused_inside_write(stage: &mut Stage<'_>, setup: &Setup) -> Result<(), ScenarioError> {
    stage.spawn(0, plan(setup, jobs(0, 1, 300), 0))?;
    stage.spawn(1, plan(setup, jobs(1, 1, 200), 50))?;
    reach(stage, 0, Phase::Writing)?;
    stage.fault(Fault::PauseWorker(0))?;
    reach(stage, 1, Phase::Done)?;
    stage.fault(Fault::ResumeWorker(0))?;
    settle(stage)
}

#[test]
fn app_side_fence_check_writes_a_stale_fence_after_its_check() {
    let script = Script {
        name: "paused-inside-write",
        setup: Setup::default(),
        run: paused_inside_write,
    };
    caught(
        Arc::new(AppSideFenceCheck),
        &[Property::FenceOrder],
        &script,
    );
}

// ---- mutual exclusion and fences ----

/// Two workers contend, w1 asking while w0 holds.
fn contend(stage: &mut Stage<'_>, setup: &Setup) -> Result<(), ScenarioError> {
    stage.spawn(0, plan(setup, jobs(0, 1, 500), 0))?;
    stage.spawn(1, plan(setup, jobs(1, 1, 500), 50))?;
    settle(stage)
}

#[test]
fn static_owner_shares_a_fence_between_two_workers() {
    let script = Script {
        name: "contend",
        setup: Setup::default(),
        run: contend,
    };
    caught(Arc::new(StaticOwner), &[Property::FenceUniqueness], &script);
}

/// w0 takes the lock and a fence while replication to the replica is cut,
/// and finishes; Redis fails over to the replica, which never saw w0's
/// fence; then w1 takes the lock.
fn fail_over_after_unreplicated_fence(
    stage: &mut Stage<'_>,
    setup: &Setup,
) -> Result<(), ScenarioError> {
    stage.fault(Fault::CutReplication)?;
    stage.spawn(0, plan(setup, jobs(0, 1, 200), 0))?;
    reach(stage, 0, Phase::Done)?;
    stage.fault(Fault::FailOver)?;
    stage.spawn(1, plan(setup, jobs(1, 1, 200), 0))?;
    reach(stage, 1, Phase::Done)
}

#[test]
fn redis_counter_fences_regress_across_failover() {
    let script = Script {
        name: "fail-over-after-unreplicated-fence",
        setup: Setup {
            replica: true,
            // The deployment asks for the durable counter; the reference
            // honours it, the mutant does not.
            fence_source: FenceSourceKind::Store,
            ..Setup::default()
        },
        run: fail_over_after_unreplicated_fence,
    };
    caught(
        Arc::new(RedisCounterFences),
        &[Property::FenceUniqueness],
        &script,
    );
}

// ---- locks that outlive their bound ----

/// One worker whose job runs twice as long as the maximum hold.
fn job_longer_than_max_hold(stage: &mut Stage<'_>, setup: &Setup) -> Result<(), ScenarioError> {
    stage.spawn(0, plan(setup, jobs(0, 1, 2 * setup.hold_ms_max), 0))?;
    settle(stage)
}

#[test]
fn unbounded_renewal_holds_the_lock_past_max_hold() {
    let script = Script {
        name: "job-longer-than-max-hold",
        setup: Setup {
            workers: 1,
            ..Setup::default()
        },
        run: job_longer_than_max_hold,
    };
    caught(
        Arc::new(UnboundedRenewal),
        &[Property::RenewalSafety, Property::BoundedLiveness],
        &script,
    );
}

/// w0 crashes the moment the lock key appears on Redis — for a protocol
/// that takes the lock in several commands, before the one that sets the
/// TTL — while w1 waits for the lock.
fn crash_as_the_lock_is_set(stage: &mut Stage<'_>, setup: &Setup) -> Result<(), ScenarioError> {
    stage.spawn(0, plan(setup, jobs(0, 1, 500), 0))?;
    stage.spawn(1, plan(setup, jobs(1, 1, 500), 300))?;
    if !stage.run_until_locked(LOCKED_MS_MAX)? {
        return Err(ScenarioError::Stuck("no lock key was ever set".to_owned()));
    }
    stage.fault(Fault::CrashWorker(0))?;
    outlive_bound(stage, setup)
}

#[test]
fn setnx_then_expire_leaves_a_lock_without_ttl_after_a_crash() {
    let script = Script {
        name: "crash-as-the-lock-is-set",
        setup: Setup::default(),
        run: crash_as_the_lock_is_set,
    };
    caught(
        Arc::new(SetnxThenExpire),
        &[Property::BoundedLiveness],
        &script,
    );
}

/// w0 crashes while holding the lock; w1 waits for it.
fn crash_while_holding(stage: &mut Stage<'_>, setup: &Setup) -> Result<(), ScenarioError> {
    stage.spawn(0, plan(setup, jobs(0, 1, 2_000), 0))?;
    stage.spawn(1, plan(setup, jobs(1, 1, 300), 100))?;
    reach(stage, 0, Phase::Holding)?;
    stage.fault(Fault::CrashWorker(0))?;
    outlive_bound(stage, setup)
}

#[test]
fn no_ttl_leaves_a_crashed_holders_lock_forever() {
    let script = Script {
        name: "crash-while-holding",
        setup: Setup::default(),
        run: crash_while_holding,
    };
    caught(Arc::new(NoTtl), &[Property::BoundedLiveness], &script);
}

/// w0 does one job normally (so its connection is up); from its second
/// acquire on, Redis's replies to it are lost: the acquire runs, w0 never
/// learns it, and fails closed, trusting the lease to expire.
fn lost_acquire_reply(stage: &mut Stage<'_>, setup: &Setup) -> Result<(), ScenarioError> {
    stage.spawn(0, plan(setup, jobs(0, 2, 100), 200))?;
    if !stage.run_until(LOCKED_MS_MAX, |s| s.probe(0).stats().len() == 1)? {
        return Err(ScenarioError::Stuck(
            "w0 never finished its first job".to_owned(),
        ));
    }
    stage.fault(Fault::DropRedisReplies(0))?;
    reach(stage, 0, Phase::Done)?;
    outlive_bound(stage, setup)
}

#[test]
fn no_ttl_and_setnx_then_expire_leave_a_lock_forever_after_a_lost_acquire_reply() {
    let script = Script {
        name: "lost-acquire-reply",
        setup: Setup {
            workers: 1,
            ..Setup::default()
        },
        run: lost_acquire_reply,
    };
    caught(Arc::new(NoTtl), &[Property::BoundedLiveness], &script);
    caught(
        Arc::new(SetnxThenExpire),
        &[Property::BoundedLiveness],
        &script,
    );
}

// ---- fail closed ----

/// An operator (on worker 2's host) overwrites the fence counter with a
/// non-integer; then w0 tries to acquire, which must fail, and w1 arrives
/// shortly after.
fn corrupt_fence_key(stage: &mut Stage<'_>, setup: &Setup) -> Result<(), ScenarioError> {
    let corrupted = Rc::new(Cell::new(false));
    let done = corrupted.clone();
    let resource = ResourceName::new(RESOURCE).expect("the resource name is valid");
    let fence_key = stage.config().keys().fence_key(&resource);
    let op_timeout = stage.config().op_timeout();
    let operator = move |env: WorkerEnv| -> WorkerFuture {
        Box::pin(async move {
            let mut conn = env.redis.clone();
            let mut set = redis::cmd("SET");
            set.arg(&fence_key).arg("not-a-number");
            let sent = tokio::time::timeout(op_timeout, set.query_async::<()>(&mut conn));
            if let Ok(Ok(())) = sent.await {
                done.set(true);
            }
        })
    };
    stage.spawn_job(2, Box::new(operator))?;
    if !stage.run_until(LOCKED_MS_MAX, |_| corrupted.get())? {
        return Err(ScenarioError::Stuck(
            "the fence key was not corrupted".to_owned(),
        ));
    }
    stage.spawn(0, plan(setup, jobs(0, 1, 200), 0))?;
    stage.spawn(1, plan(setup, jobs(1, 1, 200), 100))?;
    reach(stage, 0, Phase::Done)?;
    reach(stage, 1, Phase::Done)?;
    Ok(stage.run_for(setup.lease_ms + 500)?)
}

#[test]
fn lock_before_fence_leaves_a_lock_after_a_failed_acquire() {
    let script = Script {
        name: "corrupt-fence-key",
        setup: Setup {
            workers: 3,
            ..Setup::default()
        },
        run: corrupt_fence_key,
    };
    caught(Arc::new(LockBeforeFence), &[Property::FailClosed], &script);
}

/// One token per process is harmless while a process runs one job at a
/// time, and two holders under one lease and one fence once it runs two.
#[test]
fn process_wide_token_shows_only_when_a_process_runs_jobs_at_once() {
    use redfence_scenarios::catalog;
    use redfence_scenarios::run::run_one;
    use redfence_scenarios::sim_world::SimWorlds;
    let mutant = redfence_scenarios::protocols::by_name("process-wide-token").expect("shipped");
    let alone = catalog::by_name("mutual-exclusion").expect("catalog");
    for seed in 0..3 {
        let record = run_one(&SimWorlds, alone.as_ref(), mutant.clone(), seed);
        assert!(!record.failed(), "seed {seed}: {:?}", record.violated());
    }
    let at_once = catalog::by_name("concurrent-jobs").expect("catalog");
    let record = run_one(&SimWorlds, at_once.as_ref(), mutant, 0);
    assert_eq!(
        record.violated(),
        [Property::FenceUniqueness, Property::NoOverlappingHolders]
    );
    let overlap = record
        .verdicts
        .iter()
        .find(|v| v.property == Property::NoOverlappingHolders)
        .expect("judged");
    // Two jobs of one process, named by their slots.
    assert!(
        overlap.explanation.contains("w0.") || overlap.explanation.contains("w1."),
        "{}",
        overlap.explanation
    );
}

#[test]
fn every_mutant_is_registered_after_the_reference_in_order() {
    let protocols = redfence_scenarios::protocols::all();
    let names: Vec<&str> = protocols.iter().map(|p| p.name()).collect();
    assert_eq!(
        names,
        [
            "reference",
            "reference-steps",
            "redlock-fenced",
            "del-unlock",
            "get-then-del",
            "renew-without-owner-check",
            "no-fence-check",
            "app-side-fence-check",
            "static-owner",
            "unbounded-renewal",
            "setnx-then-expire",
            "no-ttl",
            "lock-before-fence",
            "redis-counter-fences",
            "unfenced-set-nx",
            "set-without-nx",
            "late-renewal",
            "fixed-backoff",
            "process-wide-token",
            "redlock",
            "redlock-half-quorum",
        ]
    );
    for protocol in &protocols {
        let line = protocol.describe();
        assert!(!line.is_empty() && !line.contains('\n'), "{line:?}");
    }
}

/// Runs catalog scenario `scenario` for `protocol` on seed 0 and returns
/// the explanation of the violated `property`.
fn violation(protocol: Arc<dyn Protocol>, scenario: &str, property: Property) -> String {
    let scenario = redfence_scenarios::catalog::by_name(scenario).expect("a catalog scenario");
    let record = redfence_scenarios::run::run_one(
        &redfence_scenarios::sim_world::SimWorlds,
        scenario.as_ref(),
        protocol,
        0,
    );
    let verdict = record
        .verdicts
        .iter()
        .find(|v| v.property == property)
        .expect("every property is judged");
    assert_eq!(verdict.status, Status::Violated, "{}", verdict.explanation);
    verdict.explanation.clone()
}

#[test]
fn set_without_nx_puts_two_holders_on_the_resource() {
    let why = violation(
        Arc::new(redfence_scenarios::protocols::SetWithoutNx),
        redfence_scenarios::names::scenario::MUTUAL_EXCLUSION,
        Property::NoOverlappingHolders,
    );
    assert!(why.contains("also held an unexpired lease"), "{why}");
}

#[test]
fn late_renewal_lets_a_working_holders_lease_lapse() {
    let why = violation(
        Arc::new(redfence_scenarios::protocols::LateRenewal),
        redfence_scenarios::names::scenario::RENEWAL_LIMITS,
        Property::LeaseContinuity,
    );
    assert!(why.contains("expired at"), "{why}");
    assert!(why.contains("while its job still ran"), "{why}");
}
