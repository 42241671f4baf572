//! The whole harness in the simulation, per scenario: runs per second and
//! simulated seconds per wall second for the reference protocol — world,
//! worker flow, recorder, history and the checker's properties — on
//! one thread, with the tick the scenario's lease asks for (1% of it: 10 ms
//! for the default 1 s lease).
//!
//! `cargo bench -p redfence-sim` measures the lock stack alone (no flow,
//! no recorder, no checker); this is what a sweep pays per run. The
//! baseline, measured in the same run for each scenario, is an idle world
//! with the same hosts, tick and simulated time: what turmoil's fixed tick
//! costs by itself. `fence-rejected` is the article's stale worker (two
//! workers, 1 s lease, a pause past it, fenced writes) with the checker in
//! the loop.
//!
//! `cargo bench -p redfence-scenarios` (`REDFENCE_HARNESS_BENCH_SEEDS`,
//! default 200 per scenario). Under `cargo test` it is a smoke run of 3
//! seeds per scenario.

use std::sync::Arc;
use std::time::{Duration, Instant};

use redfence_scenarios::catalog;
use redfence_scenarios::protocol::Protocol;
use redfence_scenarios::protocols::reference::Reference;
use redfence_scenarios::run::run_one;
use redfence_scenarios::scenario::Scenario;
use redfence_scenarios::sim_world::SimWorlds;
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
    let reference: Arc<dyn Protocol> = Arc::new(Reference);
    println!("reference protocol, {seeds} seeds per scenario, one thread");
    println!(
        "{:<30} {:>9} {:>11} {:>14} {:>13}",
        "scenario", "runs/s", "sim s / run", "sim s / wall s", "vs idle world"
    );
    for scenario in catalog::all() {
        let started = Instant::now();
        let mut sim_ms = 0;
        for seed in 0..seeds {
            let record = run_one(&SimWorlds, scenario.as_ref(), reference.clone(), seed);
            assert!(
                !record.failed(),
                "{} seed {seed}: the reference must pass: {:?} {:?}",
                scenario.name(),
                record.violated(),
                record.error
            );
            sim_ms += record.history.as_ref().map_or(0, |h| h.end_ms);
        }
        let wall = started.elapsed();
        let idle = idle_worlds(scenario.as_ref(), seeds, sim_ms / seeds.max(1));
        let rate = seeds as f64 / wall.as_secs_f64();
        println!(
            "{:<30} {:>9.0} {:>11.2} {:>14.0} {:>12.2}x",
            scenario.name(),
            rate,
            sim_ms as f64 / 1000.0 / seeds as f64,
            sim_ms as f64 / 1000.0 / wall.as_secs_f64(),
            rate / (seeds as f64 / idle.as_secs_f64()),
        );
    }
}

/// Wall time of `seeds` idle worlds laid out as `scenario`'s, each run for
/// `duration_ms` of simulated time.
fn idle_worlds(scenario: &dyn Scenario, seeds: u64, duration_ms: u64) -> Duration {
    let setup = scenario.setup();
    let started = Instant::now();
    for seed in 0..seeds {
        let mut world = WorldBuilder::new(seed)
            .tick_for_lease(setup.lease_ms)
            .workers(setup.workers)
            .replica(setup.replica)
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
