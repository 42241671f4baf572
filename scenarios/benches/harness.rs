//! The whole harness in the simulation, per scenario: runs per second and
//! simulated seconds per wall second for the reference protocol — world,
//! worker flow, recorder, history and the checker's properties — on
//! one thread, with the tick the scenario's lease asks for (1% of it: 10 ms
//! for the default 1 s lease).
//!
//! `cargo bench -p redfence-sim` measures the lock stack alone (no flow,
//! no recorder, no checker); this is what a sweep pays per run. Two
//! baselines are measured in the same run for each scenario, alternating
//! with it by halves of the seeds: the same runs with every host polled
//! every tick (`PolledSimWorlds`, turmoil without the idle fast path; the
//! same bytes, so the ratio is what the fast path buys), and an idle world
//! with the same hosts, tick and simulated time, every host polled: what
//! turmoil's fixed tick costs by itself. `fence-rejected` is the article's stale worker (two
//! workers, 1 s lease, a pause past it, fenced writes) with the checker in
//! the loop.
//!
//! `cargo bench -p redfence-scenarios` (`REDFENCE_HARNESS_BENCH_SEEDS`,
//! default 200 per scenario; `REDFENCE_HARNESS_BENCH_SCENARIOS`, a
//! comma-separated list of scenario names, default all). Under `cargo test`
//! it is a smoke run of 3 seeds per scenario.
//!
//! The three things measured are separate functions that are never
//! inlined (`fast_runs`, `polled_runs`, `idle_worlds`), so a callgrind
//! profile of this binary gives each one's instructions apart: the
//! inclusive cost of `fast_runs` against `idle_worlds` is the instruction
//! count behind the "vs idle world" column.

use std::sync::Arc;
use std::time::{Duration, Instant};

use redfence_scenarios::catalog;
use redfence_scenarios::protocol::Protocol;
use redfence_scenarios::protocols::reference::Reference;
use redfence_scenarios::run::run_one;
use redfence_scenarios::run::WorldFactory;
use redfence_scenarios::scenario::Scenario;
use redfence_scenarios::sim_world::{PolledSimWorlds, SimWorlds};
use redfence_sim::world::WorldBuilder;

fn main() {
    let smoke = !std::env::args().any(|a| a == "--bench");
    let seeds: u64 = if smoke {
        3
    } else {
        std::env::var("REDFENCE_HARNESS_BENCH_SEEDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(200)
    };
    let only = chosen_scenarios();
    let reference: Arc<dyn Protocol> = Arc::new(Reference);
    println!("reference protocol, {seeds} seeds per scenario, one thread");
    println!(
        "runs/s with the idle fast path; 'polled' polls every host every tick (turmoil alone);"
    );
    println!("idle worlds: the same hosts, tick and simulated time, no work, every host polled");
    println!(
        "{:<30} {:>9} {:>11} {:>14} {:>13} {:>11} {:>13}",
        "scenario",
        "runs/s",
        "sim s / run",
        "sim s / wall s",
        "polled runs/s",
        "vs polled",
        "vs idle world"
    );
    for scenario in catalog::all() {
        if only
            .as_ref()
            .is_some_and(|names| !names.iter().any(|n| n == scenario.name()))
        {
            continue;
        }
        // Alternating halves of the seeds, so drift on a shared machine
        // falls on both sides of each ratio.
        let (mut fast, mut polled, mut idle) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        let mut sim_ms = 0;
        for half in [0..seeds / 2, seeds / 2..seeds] {
            let count = half.end - half.start;
            let (wall, ms) = fast_runs(scenario.as_ref(), &reference, half.clone());
            fast += wall;
            sim_ms += ms;
            polled += polled_runs(scenario.as_ref(), &reference, half.clone()).0;
            idle += idle_worlds(scenario.as_ref(), half, ms / count.max(1));
        }
        let rate = |wall: Duration| seeds as f64 / wall.as_secs_f64();
        println!(
            "{:<30} {:>9.0} {:>11.2} {:>14.0} {:>13.0} {:>10.2}x {:>12.2}x",
            scenario.name(),
            rate(fast),
            sim_ms as f64 / 1000.0 / seeds as f64,
            sim_ms as f64 / 1000.0 / fast.as_secs_f64(),
            rate(polled),
            rate(fast) / rate(polled),
            rate(fast) / rate(idle),
        );
    }
}

/// The scenarios `REDFENCE_HARNESS_BENCH_SCENARIOS` names, or `None` for
/// all. A name the catalog does not have stops the bench before any run,
/// with the names it has.
fn chosen_scenarios() -> Option<Vec<String>> {
    let list = std::env::var("REDFENCE_HARNESS_BENCH_SCENARIOS").ok()?;
    let names: Vec<String> = list
        .split(',')
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect();
    let known: Vec<&str> = catalog::all().iter().map(|s| s.name()).collect();
    for name in &names {
        assert!(
            known.contains(&name.as_str()),
            "REDFENCE_HARNESS_BENCH_SCENARIOS: no scenario named {name:?}; the scenarios are {}",
            known.join(", ")
        );
    }
    Some(names)
}

/// `runs` with the idle fast path: what a sweep pays.
#[inline(never)]
fn fast_runs(
    scenario: &dyn Scenario,
    reference: &Arc<dyn Protocol>,
    seeds: std::ops::Range<u64>,
) -> (Duration, u64) {
    runs(&SimWorlds, scenario, reference, seeds)
}

/// `runs` with every host polled every tick: turmoil without the fast path.
#[inline(never)]
fn polled_runs(
    scenario: &dyn Scenario,
    reference: &Arc<dyn Protocol>,
    seeds: std::ops::Range<u64>,
) -> (Duration, u64) {
    runs(&PolledSimWorlds, scenario, reference, seeds)
}

/// Wall time of `scenario` on `seeds` in `worlds`, and the simulated time
/// the runs covered.
fn runs(
    worlds: &dyn WorldFactory,
    scenario: &dyn Scenario,
    reference: &Arc<dyn Protocol>,
    seeds: std::ops::Range<u64>,
) -> (Duration, u64) {
    let started = Instant::now();
    let mut sim_ms = 0;
    for seed in seeds {
        let record = run_one(worlds, scenario, reference.clone(), seed);
        assert!(
            !record.failed(),
            "{} seed {seed}: the reference must pass: {:?} {:?}",
            scenario.name(),
            record.violated(),
            record.error
        );
        sim_ms += record.history.as_ref().map_or(0, |h| h.end_ms);
    }
    (started.elapsed(), sim_ms)
}

/// Wall time of idle worlds laid out as `scenario`'s, one a seed, each run
/// for `duration_ms` of simulated time with every host polled every tick.
#[inline(never)]
fn idle_worlds(scenario: &dyn Scenario, seeds: std::ops::Range<u64>, duration_ms: u64) -> Duration {
    let setup = scenario.setup();
    let started = Instant::now();
    for seed in seeds {
        let mut world = WorldBuilder::new(seed)
            .idle_fast_path(false)
            .tick_for_lease(setup.lease_ms)
            .workers(setup.workers)
            .replica(setup.replica)
            .masters(setup.masters)
            .build()
            .expect("the scenario's own layout");
        for i in 0..setup.workers {
            world
                .spawn_worker(i, move |_ctx| async move {
                    tokio::time::sleep(Duration::from_millis(duration_ms)).await
                })
                .expect("worker");
        }
        let finished = world
            .run_until_workers_done(Duration::from_millis(duration_ms * 2 + 1_000))
            .expect("idle world");
        assert!(finished, "idle workers finish");
    }
    started.elapsed()
}
