//! Seeds per second and simulated seconds per wall second for the
//! stale-worker workload (two workers, 1 s lease, a pause past the lease,
//! fenced writes; the full redfence stack: lock client, keeper, Lua scripts,
//! simulated Redis and store), on one core.
//!
//! The tick follows the lease (1% of it: 10 ms for a 1 s lease, the coarsest
//! the issue allows). The baseline, measured in the same run, is the same
//! world with the same hosts and the same simulated duration but no traffic:
//! what turmoil's fixed tick costs by itself. The 1 ms tick row shows what a
//! finer clock costs. Every seed also runs a second time, and the two traces
//! must be byte-identical (the 1,000-seed determinism check).
//!
//! `cargo bench -p redfence-sim` (`REDFENCE_SIM_BENCH_SEEDS`, default 1000).
//! Under `cargo test` it is a smoke run of 20 seeds.

use std::time::{Duration, Instant};

use redfence_sim::workload;
use redfence_sim::world::WorldBuilder;

const LEASE_MS: u64 = 1_000;

fn main() {
    let smoke = !std::env::args().any(|a| a == "--bench");
    let seeds: u64 = if smoke {
        20
    } else {
        std::env::var("REDFENCE_SIM_BENCH_SEEDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1_000)
    };
    let tick_ms = LEASE_MS / 100;

    let (full, sim_ms) = measure(seeds, |seed| {
        workload::stale_worker(seed, tick_ms, LEASE_MS).unwrap()
    });
    let per_run_ms = sim_ms / seeds;
    let (idle, _) = measure(seeds, |seed| idle_world(seed, tick_ms, per_run_ms));
    let fine_seeds = (seeds / 10).max(5);
    let (fine, fine_sim_ms) = measure(fine_seeds, |seed| {
        workload::stale_worker(seed, 1, LEASE_MS).unwrap()
    });

    println!("stale-worker workload, lease {LEASE_MS} ms, {seeds} seeds, one core");
    println!(
        "{:<34} {:>10} {:>14} {:>10}",
        "run", "seeds/s", "sim s / wall s", "vs idle"
    );
    let rate = |n: u64, d: Duration| n as f64 / d.as_secs_f64();
    let idle_rate = rate(seeds, idle);
    let rows = [
        ("idle world (baseline), 10 ms tick", seeds, idle, sim_ms),
        ("full stack, 10 ms tick", seeds, full, sim_ms),
        ("full stack, 1 ms tick", fine_seeds, fine, fine_sim_ms),
    ];
    for (name, n, wall, sim) in rows {
        println!(
            "{:<34} {:>10.0} {:>14.0} {:>9.2}x",
            name,
            rate(n, wall),
            sim as f64 / 1000.0 / wall.as_secs_f64(),
            rate(n, wall) / idle_rate
        );
    }
    println!("determinism: {seeds} seeds each run twice, traces byte-identical");
}

/// Runs `run` for seeds `0..seeds` twice, asserting identical text, and
/// returns the wall time of the first pass and the simulated time covered.
fn measure(seeds: u64, run: impl Fn(u64) -> workload::RunText) -> (Duration, u64) {
    let started = Instant::now();
    let mut texts = Vec::with_capacity(seeds as usize);
    let mut sim_ms = 0;
    for seed in 0..seeds {
        let r = run(seed);
        sim_ms += r.sim_ms;
        texts.push(r.text);
    }
    let wall = started.elapsed();
    for (seed, text) in texts.iter().enumerate() {
        assert_eq!(
            *text,
            run(seed as u64).text,
            "seed {seed} is not deterministic"
        );
    }
    (wall, sim_ms)
}

fn idle_world(seed: u64, tick_ms: u64, duration_ms: u64) -> workload::RunText {
    let mut world = WorldBuilder::new(seed)
        .tick_ms(tick_ms)
        .workers(2)
        .build()
        .unwrap();
    for i in 0..2 {
        world
            .spawn_worker(i, move |_ctx| async move {
                tokio::time::sleep(Duration::from_millis(duration_ms)).await
            })
            .unwrap();
    }
    world
        .run_until_workers_done(Duration::from_millis(duration_ms * 2))
        .unwrap();
    workload::finish(&world)
}
