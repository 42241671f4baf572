//! Sweeps: every chosen scenario × protocol over many seeds, in parallel,
//! optionally one shard of the seed space, reduced to a [`Sweep`] — the
//! serialisable result the CLI prints and reports render.
//!
//! Independent seeds run on `jobs` threads, each building its own world.
//! The result does not depend on the thread count or on which thread
//! finished first: records are reduced by seed order, so two sweeps of the
//! same plan give equal results. Memory stays bounded: a cell keeps its
//! tallies and at most two full records (its first run and its first
//! failure), never every history.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::mutation::promised;
use crate::protocol::Protocol;
use crate::run::{run_one, WorldFactory};
use crate::scenario::Scenario;

pub use redfence_history::names::protocol::REFERENCE;
pub use redfence_history::sweep::{
    score, Cell, CellAcc, CellStatus, Expectation, MutantScore, ProtocolInfo, ScenarioInfo, Shard,
    ShardError, Sweep, Tally, SCHEMA_VERSION,
};

/// Most seeds one sweep may run per cell (a bound on the work queue).
pub const SEEDS_MAX: u64 = 10_000_000;

/// Most threads a sweep starts.
pub const JOBS_MAX: usize = 256;

/// What a sweep runs.
#[derive(Clone)]
pub struct SweepPlan {
    /// Scenarios, in order.
    pub scenarios: Vec<Arc<dyn Scenario>>,
    /// Protocols, in order.
    pub protocols: Vec<Arc<dyn Protocol>>,
    /// First seed.
    pub seed_first: u64,
    /// Seeds per cell before sharding.
    pub seeds: u64,
    /// Threads.
    pub jobs: usize,
    /// Only this shard of the seeds.
    pub shard: Option<Shard>,
}

impl SweepPlan {
    /// The seeds this plan runs per cell, in order.
    pub fn seed_list(&self) -> Vec<u64> {
        let seeds = self.seeds.min(SEEDS_MAX);
        if seeds == 0 {
            return Vec::new();
        }
        // Inclusive, so the last seed, u64::MAX, can run; a range past it
        // is cut there (the CLI refuses one before it gets here).
        let last = self.seed_first.saturating_add(seeds - 1);
        (self.seed_first..=last)
            .filter(|&seed| self.shard.is_none_or(|shard| shard.contains(seed)))
            .collect()
    }
}

/// A sweep's progress, for progress bars.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Runs finished.
    pub done: usize,
    /// Runs in the sweep.
    pub total: usize,
    /// Runs that failed so far (violation or error).
    pub failed: usize,
}

/// Runs `plan` in worlds from `worlds`, calling `progress` after each run.
pub fn sweep(
    worlds: &dyn WorldFactory,
    plan: &SweepPlan,
    progress: &(dyn Fn(Progress) + Sync),
) -> Sweep {
    let seeds = plan.seed_list();
    let cells_count = plan.scenarios.len() * plan.protocols.len();
    let total = cells_count * seeds.len();
    let accs: Vec<Mutex<CellAcc>> = (0..cells_count)
        .map(|_| Mutex::new(CellAcc::new()))
        .collect();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let failed = AtomicUsize::new(0);
    let jobs = plan.jobs.clamp(1, JOBS_MAX);
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(total.max(1)) {
            scope.spawn(|| {
                // Bounded: each turn claims one of `total` units.
                loop {
                    let unit = next.fetch_add(1, Ordering::Relaxed);
                    if unit >= total {
                        break;
                    }
                    let cell = unit / seeds.len();
                    let position = unit % seeds.len();
                    let scenario = &plan.scenarios[cell / plan.protocols.len()];
                    let protocol = &plan.protocols[cell % plan.protocols.len()];
                    let record =
                        run_one(worlds, scenario.as_ref(), protocol.clone(), seeds[position]);
                    if record.failed() {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                    let expected = promised(protocol.name(), scenario.name());
                    accs[cell].lock().unwrap_or_else(|e| e.into_inner()).add(
                        position as u64 + 1,
                        record,
                        &expected,
                    );
                    let done = done.fetch_add(1, Ordering::Relaxed) + 1;
                    progress(Progress {
                        done,
                        total,
                        failed: failed.load(Ordering::Relaxed),
                    });
                }
            });
        }
    });
    let accs = accs
        .into_iter()
        .map(|acc| acc.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect();
    Sweep {
        schema_version: SCHEMA_VERSION,
        world: worlds.kind(),
        seed_first: plan.seed_first,
        seeds: plan.seeds,
        shard: plan.shard,
        scenarios: plan
            .scenarios
            .iter()
            .map(|s| {
                let mut params = s.setup().params();
                params.extend(s.params());
                ScenarioInfo {
                    name: s.name().to_owned(),
                    description: s.describe().to_owned(),
                    targets: s.targets().to_vec(),
                    params,
                }
            })
            .collect(),
        protocols: plan
            .protocols
            .iter()
            .map(|p| ProtocolInfo {
                name: p.name().to_owned(),
                description: p.describe().to_owned(),
            })
            .collect(),
        cells: Vec::new(),
        mutants: Vec::new(),
        provenance: None,
    }
    .with_cells(accs)
}

/// Puts `protocol` — typically a team's own lock — through every scenario
/// in the simulation on seeds `0..seeds`, on every core: the one call that
/// verifies a protocol. Every cell is expected to pass; [`Sweep::ok`] says
/// whether all did, and each failing cell keeps its first failure with the
/// line that replays it.
///
/// # Panics
///
/// When the protocol takes a built-in name (`reference` or a shipped
/// mutant's): the sweep would judge it as that protocol — a mutant's
/// promises instead of "must pass" — and its replay line would run the
/// built-in, not the caller's code.
pub fn verify(protocol: Arc<dyn Protocol>, seeds: u64) -> Sweep {
    assert!(
        !redfence_history::record::is_built_in(protocol.name()),
        "verify: the protocol is named {:?}, a built-in protocol's name; give your lock a \
         name of its own (kebab-case)",
        protocol.name()
    );
    let plan = SweepPlan {
        scenarios: crate::catalog::all(),
        protocols: vec![protocol],
        seed_first: 0,
        seeds,
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
        shard: None,
    };
    sweep(&crate::sim_world::SimWorlds, &plan, &|_| {})
}
