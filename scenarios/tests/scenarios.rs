//! Every scenario in the simulation: the reference protocol passes on every
//! seed, and each mutant the scenario promises to catch (see
//! `redfence_scenarios::mutation::CATCHES`) is caught — its promised property
//! reported `Violated` by the checker — on some seed. So no property here is
//! only ever seen passing.
//!
//! One test per scenario, named after it (kebab → snake case), so a failure
//! names its scenario and `cargo test --test scenarios stale_worker_pause`
//! runs one. Every failure prints the line that replays it; setting
//! `REDFENCE_SEED` (and, for `random_faults`, `REDFENCE_SCHEDULE`) runs
//! exactly that seed. `REDFENCE_SEEDS` raises the seed count for a deeper
//! local sweep (`redfence run` is the tool for deep sweeps).

use std::sync::Arc;

use redfence_scenarios::catalog::{self, hotspot_load};
use redfence_scenarios::explore::{
    explore_parallel, Budget, FaultKind, RandomFaults, Schedule, SHRINKING,
};
use redfence_scenarios::mutation::{self, CATCHES};
use redfence_scenarios::protocols::{self, Reference};
use redfence_scenarios::run::{run_one, RunRecord, REPLAY_SCHEDULE_ENV, REPLAY_SEED_ENV};
use redfence_scenarios::sim_world::SimWorlds;
use redfence_scenarios::sweep::{sweep, CellStatus, SweepPlan};
use redfence_scenarios::timeline::timeline;
use redfence_scenarios::{OpKind, Property, Status};

/// Seeds per scenario for the reference (enough to cover the timing spread
/// of jitter and latency, small enough for a debug build).
const SEEDS_DEFAULT: u64 = 12;

/// Seeds a promised mutant gets before it counts as missed.
const CATCH_SEEDS_MAX: u64 = 20;

fn seeds() -> Vec<u64> {
    if let Ok(seed) = std::env::var(REPLAY_SEED_ENV) {
        let seed = seed
            .parse()
            .unwrap_or_else(|_| panic!("{REPLAY_SEED_ENV}={seed:?} is not a seed (u64)"));
        return vec![seed];
    }
    let count = std::env::var("REDFENCE_SEEDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(SEEDS_DEFAULT);
    (0..count).collect()
}

fn explain(record: &RunRecord) -> String {
    let mut lines = vec![format!(
        "{} × {} failed on seed {}",
        record.scenario, record.protocol, record.seed
    )];
    if let Some(error) = &record.error {
        lines.push(format!("  run: {error}"));
    }
    for verdict in record
        .verdicts
        .iter()
        .filter(|v| v.status == Status::Violated)
    {
        lines.push(format!(
            "  {} violated: {}",
            verdict.property.name(),
            verdict.explanation
        ));
    }
    lines.push(format!("  replay: {}", record.replay));
    lines.join("\n")
}

/// The reference passes every seed; every promised mutant is caught.
fn scenario_holds_and_bites(name: &str) {
    let scenario = catalog::by_name(name).expect("a catalog scenario");
    for seed in seeds() {
        let record = run_one(&SimWorlds, scenario.as_ref(), Arc::new(Reference), seed);
        assert!(record.history.is_some(), "{}", explain(&record));
        assert!(!record.failed(), "{}", explain(&record));
    }
    for catch in CATCHES.iter().filter(|c| c.scenario == name) {
        let mutant = protocols::by_name(catch.mutant).expect("a shipped mutant");
        let caught = (0..CATCH_SEEDS_MAX).find_map(|seed| {
            let record = run_one(&SimWorlds, scenario.as_ref(), mutant.clone(), seed);
            record
                .verdicts
                .iter()
                .any(|v| v.property == catch.property && v.status == Status::Violated)
                .then_some((seed, record))
        });
        let (seed, record) = caught.unwrap_or_else(|| {
            panic!(
                "{name} did not catch {} ({} never violated in {CATCH_SEEDS_MAX} seeds)",
                catch.mutant,
                catch.property.name()
            )
        });
        println!(
            "{name} caught {} ({}) on seed {seed}: {}",
            catch.mutant,
            catch.property.name(),
            record.replay
        );
    }
}

#[test]
fn mutual_exclusion() {
    scenario_holds_and_bites("mutual-exclusion");
}

#[test]
fn stale_worker_pause() {
    scenario_holds_and_bites("stale-worker-pause");
}

#[test]
fn late_unlock() {
    scenario_holds_and_bites("late-unlock");
}

#[test]
fn lost_acquire_reply() {
    scenario_holds_and_bites("lost-acquire-reply");
}

#[test]
fn renewal_limits() {
    scenario_holds_and_bites("renewal-limits");
}

#[test]
fn crash_after_acquire() {
    scenario_holds_and_bites("crash-after-acquire");
}

#[test]
fn crash_mid_mutation() {
    scenario_holds_and_bites("crash-mid-mutation");
}

#[test]
fn crash_before_ack() {
    scenario_holds_and_bites("crash-before-ack");
}

#[test]
fn redis_unavailable() {
    scenario_holds_and_bites("redis-unavailable");
}

#[test]
fn fence_rejected() {
    scenario_holds_and_bites("fence-rejected");
}

#[test]
fn failover_counter_regression() {
    scenario_holds_and_bites("failover-counter-regression");
    // The scenario checks that its replication cut landed inside a holding
    // and tries again (undoing it) when it did not, which only a slow real
    // cut needs: in the simulation the first cut lands for every protocol,
    // so its schedule is the one the digests pin, and the replica it
    // promotes holds a lock.
    let scenario = catalog::by_name("failover-counter-regression").expect("a catalog scenario");
    for protocol in protocols::all() {
        for seed in seeds() {
            let record = run_one(&SimWorlds, scenario.as_ref(), protocol.clone(), seed);
            let history = record.history.as_ref().expect("a history");
            let cuts = history
                .faults
                .iter()
                .filter(|f| f.fault == redfence_scenarios::fault::Fault::CutReplication)
                .count();
            let restores = history
                .faults
                .iter()
                .filter(|f| f.fault == redfence_scenarios::fault::Fault::RestoreReplication)
                .count();
            assert_eq!(
                (cuts, restores),
                (1, 0),
                "{} on seed {seed}: {cuts} cuts, {restores} restores ({:?})",
                protocol.name(),
                record.error
            );
        }
    }
}

#[test]
fn hotspot_load() {
    scenario_holds_and_bites("hotspot-load");
}

#[test]
fn concurrent_jobs() {
    scenario_holds_and_bites("concurrent-jobs");
    // The jobs really ran at once, each slot a holder of its own: for both
    // the deployed reference and the step-level flow, every slot reported
    // its jobs, and each worker had both slots inside a job (between its
    // first request and its report) at one moment.
    let scenario = catalog::by_name("concurrent-jobs").expect("a catalog scenario");
    for protocol in [
        protocols::by_name("reference").expect("shipped"),
        protocols::by_name("reference-steps").expect("shipped"),
    ] {
        let record = run_one(&SimWorlds, scenario.as_ref(), protocol, 0);
        let history = record.history.as_ref().expect("a history");
        let jobs = |slot: &str| -> Vec<(u64, u64)> {
            // (first op of the job, its report), per job in order.
            let mut spans = Vec::new();
            let mut start: Option<u64> = None;
            for op in history.ops.iter().filter(|op| op.worker == slot) {
                let begun = *start.get_or_insert(op.invoke_ms);
                if matches!(op.kind, OpKind::Report { .. }) {
                    spans.push((begun, op.invoke_ms));
                    start = None;
                }
            }
            spans
        };
        for worker in ["w0", "w1"] {
            let (a, b) = (jobs(&format!("{worker}.0")), jobs(&format!("{worker}.1")));
            assert_eq!((a.len(), b.len()), (2, 2), "{}", record.protocol);
            let overlap = a.iter().any(|x| b.iter().any(|y| x.0 < y.1 && y.0 < x.1));
            assert!(
                overlap,
                "{}: {worker}'s slots never ran at once",
                record.protocol
            );
        }
        assert!(
            history.ops.iter().all(|op| op.worker.contains('.')),
            "every op of a worker running jobs at once names its slot"
        );
    }
}

#[test]
fn redlock_clock_jump() {
    scenario_holds_and_bites("redlock-clock-jump");
}

#[test]
fn redlock_master_restart() {
    scenario_holds_and_bites("redlock-master-restart");
}

#[test]
fn redlock_pause() {
    scenario_holds_and_bites("redlock-pause");
}

#[test]
fn redlock_minority_partition() {
    scenario_holds_and_bites("redlock-minority-partition");
}

/// Seeds per Redlock cell in the tests below.
const REDLOCK_SEEDS: u64 = 4;

/// The first violated verdict of `property`, if any.
fn violated(record: &RunRecord, property: Property) -> Option<String> {
    record
        .verdicts
        .iter()
        .find(|v| v.property == property && v.status == Status::Violated)
        .map(|v| v.explanation.clone())
}

/// Redlock's debate at three and at five masters: the unfenced Redlock has
/// a stale write accepted when a master's clock jumps, when a master
/// forgets and when the holder pauses, and stays safe when a worker is cut
/// off from a majority; the fenced Redlock violates nothing anywhere; the
/// quorum counted one short lets the minority side write without holding.
#[test]
fn redlock_at_three_and_five_masters() {
    use redfence_scenarios::catalog::{
        RedlockClockJump, RedlockMasterRestart, RedlockMinorityPartition, RedlockPause,
    };
    use redfence_scenarios::protocols::{Redlock, RedlockFenced, RedlockHalfQuorum};
    use redfence_scenarios::scenario::Scenario;
    for masters in [3, 5] {
        let stale: [Box<dyn Scenario>; 3] = [
            Box::new(RedlockClockJump::with_masters(masters)),
            Box::new(RedlockMasterRestart::with_masters(masters)),
            Box::new(RedlockPause::with_masters(masters)),
        ];
        let minority = RedlockMinorityPartition::with_masters(masters);
        for seed in 0..REDLOCK_SEEDS {
            for scenario in stale
                .iter()
                .map(Box::as_ref)
                .chain([&minority as &dyn Scenario])
            {
                assert_eq!(scenario.setup().masters, masters);
                let fenced = run_one(&SimWorlds, scenario, Arc::new(RedlockFenced), seed);
                assert!(fenced.history.is_some(), "{}", explain(&fenced));
                assert!(!fenced.failed(), "{}", explain(&fenced));
                let unfenced = run_one(&SimWorlds, scenario, Arc::new(Redlock), seed);
                let stale_write = violated(&unfenced, Property::UnfencedStaleWrite);
                if scenario.name() == minority.name() {
                    assert!(!unfenced.failed(), "{}", explain(&unfenced));
                } else {
                    let why = stale_write.unwrap_or_else(|| {
                        panic!(
                            "no stale write at {masters} masters: {}",
                            explain(&unfenced)
                        )
                    });
                    assert!(why.contains("a majority of the masters"), "{why}");
                }
            }
            let short = run_one(&SimWorlds, &minority, Arc::new(RedlockHalfQuorum), seed);
            let why = violated(&short, Property::FailClosed)
                .unwrap_or_else(|| panic!("{}", explain(&short)));
            assert!(why.contains("did not acquire"), "{why}");
        }
    }
}

/// Redis' remedy for masters that forget: a crashed master restarts only
/// after the longest lease, and no second majority forms — the unfenced
/// Redlock that `redlock-master-restart` catches passes the delayed
/// variant at three and five masters.
#[test]
fn a_delayed_restart_closes_redlock_master_restart() {
    use redfence_scenarios::catalog::RedlockMasterRestart;
    use redfence_scenarios::protocols::Redlock;
    for masters in [3, 5] {
        let delayed = RedlockMasterRestart::delayed(masters);
        for seed in 0..REDLOCK_SEEDS {
            let record = run_one(&SimWorlds, &delayed, Arc::new(Redlock), seed);
            assert!(record.history.is_some(), "{}", explain(&record));
            assert!(!record.failed(), "{}", explain(&record));
            let history = record.history.as_ref().expect("a history");
            // Both jobs ran to a successful write, one after the other.
            let successes = history
                .ops
                .iter()
                .filter(|op| {
                    matches!(
                        op.kind,
                        OpKind::Report {
                            outcome: redfence_scenarios::JobReport::Success,
                            ..
                        }
                    )
                })
                .count();
            assert_eq!(successes, 2, "{}", timeline(history));
        }
    }
}

/// The test names above are the catalog: a scenario added to the catalog
/// without a test (or renamed) fails here. And every scenario promises to
/// catch at least one mutant, so none of its properties is only ever seen
/// passing.
#[test]
fn every_scenario_has_its_test_and_a_mutant_to_catch() {
    let source = include_str!("scenarios.rs");
    for scenario in catalog::all() {
        let test = format!("fn {}()", scenario.name().replace('-', "_"));
        assert!(
            source.contains(&test),
            "no test {test} for {}",
            scenario.name()
        );
        assert!(
            CATCHES.iter().any(|c| c.scenario == scenario.name()),
            "{} promises to catch no mutant",
            scenario.name()
        );
    }
}

/// Exploration: random fault schedules find nothing against the reference,
/// and find — and shrink — a violation of a broken protocol. With
/// `REDFENCE_SCHEDULE` and `REDFENCE_SEED` set, replays that one schedule.
#[test]
fn random_faults() {
    if let Ok(text) = std::env::var(REPLAY_SCHEDULE_ENV) {
        let schedule: Schedule = text
            .parse()
            .expect("a schedule as redfence explore prints it");
        let protocol = std::env::var("REDFENCE_PROTOCOL").unwrap_or_else(|_| "reference".into());
        let protocol = protocols::by_name(&protocol).expect("a shipped protocol");
        for seed in seeds() {
            let scenario = RandomFaults {
                schedule: schedule.clone(),
            };
            let record = run_one(&SimWorlds, &scenario, protocol.clone(), seed);
            print!("{}", timeline(record.history.as_ref().expect("a history")));
            assert!(!record.failed(), "{}", explain(&record));
        }
        return;
    }
    // Four exploration seeds, one per thread, a fixed budget between them.
    let clean = explore_parallel(
        &SimWorlds,
        Arc::new(Reference),
        1,
        4,
        Budget::Cases(100),
        &|_| {},
    );
    if let Some(found) = clean.found {
        panic!("{}", explain(&found.record));
    }
    assert_eq!(clean.cases, 100);

    let mutant = protocols::by_name("no-fence-check").expect("a shipped mutant");
    // Shrinking reports each of its runs as progress (a real-world
    // watchdog counts on it).
    let shrink_runs = std::sync::atomic::AtomicU64::new(0);
    let broken = explore_parallel(&SimWorlds, mutant, 1, 1, Budget::Cases(200), &|tried| {
        if tried == SHRINKING {
            shrink_runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    });
    assert!(
        shrink_runs.load(std::sync::atomic::Ordering::Relaxed) > 0,
        "shrinking ran without reporting progress"
    );
    let found = broken
        .found
        .expect("random faults break a store without a fence check");
    assert!(found.record.failed());
    assert!(
        found.schedule.faults.len() <= found.faults_before_shrinking,
        "shrinking never adds faults"
    );
    // 1-minimal: the schedule is in time order, and dropping any one fault
    // or shortening any one window by a millisecond loses the violation.
    assert!(found.minimal, "minimize proved nothing: {}", found.schedule);
    // Minimal with respect to what the first failure violated.
    let target = found.target.clone();
    assert!(!target.is_empty(), "{}", explain(&found.record));
    assert!(
        found.record.violated().iter().any(|p| target.contains(p)),
        "the shrunk run still violates what the first one did"
    );
    assert!(
        found
            .schedule
            .faults
            .windows(2)
            .all(|pair| pair[0].at_ms <= pair[1].at_ms),
        "not in time order: {}",
        found.schedule
    );
    let still_fails = |schedule: Schedule| {
        let record = run_one(
            &SimWorlds,
            &RandomFaults { schedule },
            protocols::by_name("no-fence-check").expect("a shipped mutant"),
            found.seed,
        );
        record.violated().iter().any(|p| target.contains(p))
    };
    for i in 0..found.schedule.faults.len() {
        let mut fewer = found.schedule.clone();
        fewer.faults.remove(i);
        assert!(
            !still_fails(fewer.clone()),
            "dropping fault {i} still fails: {fewer}"
        );
        let window = found.schedule.faults[i];
        if window.kind != FaultKind::Crash && window.for_ms > 1 {
            let mut shorter = found.schedule.clone();
            shorter.faults[i].for_ms -= 1;
            assert!(
                !still_fails(shorter.clone()),
                "a shorter window {i} still fails: {shorter}"
            );
        }
    }
    // The shrunk schedule replays to the same failure, byte for byte.
    let again = run_one(
        &SimWorlds,
        &RandomFaults {
            schedule: found.schedule.clone(),
        },
        protocols::by_name("no-fence-check").expect("a shipped mutant"),
        found.seed,
    );
    assert_eq!(again, found.record);
    // And its text form parses back to itself (it is what replay lines carry).
    let text = found.schedule.to_string();
    assert_eq!(
        text.parse::<Schedule>().expect("round trip"),
        found.schedule
    );
    println!(
        "no-fence-check broke after {} schedules; shrunk from {} to {} faults: {}",
        broken.cases,
        found.faults_before_shrinking,
        found.schedule.faults.len(),
        found.record.replay
    );
}

/// Same seed, same run: the whole record — history, truth logs, verdicts,
/// metrics — and the printed timeline are identical, for every scenario,
/// for a broken protocol too, and for a lock over several masters.
#[test]
fn same_seed_same_run() {
    for scenario in catalog::all() {
        for protocol in [
            protocols::by_name("reference"),
            protocols::by_name("no-fence-check"),
            // A lock over every master: several servers' logs and the
            // majority view folded from them.
            protocols::by_name("redlock"),
        ] {
            let protocol = protocol.expect("shipped");
            let first = run_one(&SimWorlds, scenario.as_ref(), protocol.clone(), 4242);
            let second = run_one(&SimWorlds, scenario.as_ref(), protocol, 4242);
            let json = |r: &RunRecord| serde_json::to_string(r).expect("serialises");
            assert_eq!(json(&first), json(&second), "{}", scenario.name());
            let text = |r: &RunRecord| timeline(r.history.as_ref().expect("history"));
            assert_eq!(text(&first), text(&second));
        }
    }
    // Different seeds do differ (owner tokens at least), so the comparison
    // above compares something.
    let scenario = catalog::by_name("mutual-exclusion").expect("catalog");
    let a = run_one(&SimWorlds, scenario.as_ref(), Arc::new(Reference), 1);
    let b = run_one(&SimWorlds, scenario.as_ref(), Arc::new(Reference), 2);
    assert_ne!(a.history, b.history);
}

/// Every mutant through every scenario: the reference passes everything,
/// every promised catch happens; prints the mutation-score table with the
/// seeds each mutant took to catch.
#[test]
fn mutation_score() {
    let plan = SweepPlan {
        scenarios: catalog::all(),
        protocols: protocols::all(),
        seed_first: 0,
        seeds: 6,
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
        shard: None,
    };
    let result = sweep(&SimWorlds, &plan, &|_| {});
    println!(
        "{:<28} {:>8} {:>7} {:>15}",
        "mutant", "promised", "caught", "seeds to catch"
    );
    for m in &result.mutants {
        println!(
            "{:<28} {:>8} {:>7} {:>15}",
            m.mutant,
            m.promised,
            m.caught,
            m.seeds_to_catch.map_or("-".into(), |n| n.to_string())
        );
    }
    if let Some(cell) = result.failed_cells().first() {
        let record = cell
            .first_failure
            .as_ref()
            .expect("a failed cell keeps its failure");
        panic!("{}", explain(record));
    }
    let missed: Vec<String> = result
        .missed()
        .iter()
        .map(|c| format!("{} × {}", c.scenario, c.protocol))
        .collect();
    assert!(missed.is_empty(), "promised catches missed: {missed:?}");
    // Every shipped protocol but the reference at its two levels and the
    // fenced Redlock.
    assert_eq!(result.mutants.len(), protocols::all().len() - 3);
    // Each mutant trips exactly the properties the table expects, and the
    // reference (both levels) none.
    for protocol in protocols::all() {
        let name = protocol.name();
        let violated: Vec<Property> = Property::ALL
            .into_iter()
            .filter(|&property| {
                result.cells.iter().any(|cell| {
                    cell.protocol == name
                        && cell
                            .tallies
                            .iter()
                            .any(|t| t.property == property && t.violated > 0)
                })
            })
            .collect();
        let mut expected = mutation::expected_violations(name).to_vec();
        expected.sort();
        assert_eq!(violated, expected, "{name}: violated vs expected");
    }
    for m in &result.mutants {
        assert!(
            m.promised > 0,
            "{} has no scenario meant to catch it",
            m.mutant
        );
        assert_eq!(m.caught, m.promised, "{}", m.mutant);
    }
    // Sharding splits the same work with no overlap and no gap.
    let shard = |i| SweepPlan {
        shard: Some(format!("{i}/2").parse().expect("a shard")),
        seeds: 4,
        ..plan.clone()
    };
    let (one, two) = (shard(1).seed_list(), shard(2).seed_list());
    assert_eq!(one.len() + two.len(), 4);
    assert!(one.iter().all(|s| !two.contains(s)));
    assert!(result.cells.iter().all(|c| c.status != CellStatus::Failed));
}

/// The hotspot wait curve: waiting grows with workers, with and without
/// jitter; the numbers are printed (they go in reports, not assertions on
/// speed).
#[test]
fn hotspot_wait_curve() {
    let curve = hotspot_load::wait_curve(&SimWorlds, &[0, 1]);
    assert_eq!(curve.len(), 2 * hotspot_load::CURVE_WORKERS.len());
    for point in &curve {
        assert_eq!(point.seeds, 2, "every point ran");
        println!("{point:?}");
    }
    for jitter in [true, false] {
        let of = |workers| {
            curve
                .iter()
                .find(|p| p.jitter == jitter && p.workers == workers)
                .expect("a point")
        };
        // Sixteen workers queue for one lock; two barely do. (The tail, not
        // the median: without jitter many waits are one fixed window.)
        assert!(
            of(16).wait_ms_p99 > of(2).wait_ms_p99,
            "jitter={jitter}: {:?} vs {:?}",
            of(16),
            of(2)
        );
    }
}
