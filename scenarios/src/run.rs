//! Running scenarios: one seed ([`run_one`]), and the serialisable result of
//! a run that reports render from ([`RunRecord`], [`Metrics`]).
//!
//! A run builds a fresh world from a [`WorldSpec`] (through a
//! [`WorldFactory`], so the same code drives the simulation and the real
//! world), runs the scenario's script against the protocol, judges the
//! history, and names the one command that replays it.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::checker::check;
use crate::driver::JobStat;
use crate::history::{History, OkValue, OpKind, Outcome};
use crate::property::Property;
use crate::protocol::Protocol;
use crate::scenario::{Param, Scenario, ScenarioError};
use crate::stage::Stage;
use crate::verdict::{Status, Verdict};
use crate::world::{World, WorldError, WorldKind};

/// The environment variable through which `cargo test` replays one seed.
pub const REPLAY_SEED_ENV: &str = "REDFENCE_SEED";

/// The environment variable through which `cargo test` replays a schedule.
pub const REPLAY_SCHEDULE_ENV: &str = "REDFENCE_SCHEDULE";

/// How a world must be laid out for one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorldSpec {
    /// The run's seed (everything random derives from it in the simulation).
    pub seed: u64,
    /// Workers.
    pub workers: usize,
    /// Whether Redis has a replica.
    pub replica: bool,
    /// The lease, which sets the simulation's time resolution.
    pub lease_ms: u64,
    /// Link latency range, each way.
    pub latency_ms: (u64, u64),
    /// Hard bound on the run's time.
    pub duration_ms_max: u64,
    /// Per-operation timeout on the store path.
    pub op_timeout_ms: u64,
}

/// Builds worlds of one kind.
pub trait WorldFactory: Send + Sync {
    /// Which kind.
    fn kind(&self) -> WorldKind;
    /// A fresh world as `spec` asks.
    fn build(&self, spec: &WorldSpec) -> Result<Box<dyn World>, WorldError>;

    /// Checks that worlds can be built here at all (servers, images), so a
    /// sweep fails fast with the reason instead of failing every run.
    fn preflight(&self) -> Result<(), WorldError> {
        self.build(&WorldSpec {
            seed: 0,
            workers: 1,
            replica: false,
            lease_ms: 1_000,
            latency_ms: (1, 3),
            duration_ms_max: 60_000,
            op_timeout_ms: 150,
        })
        .map(drop)
    }
}

/// Figures of one run, from its history and the workers' job statistics.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Jobs the workers processed.
    pub jobs: u64,
    /// Acquire attempts answered `acquired`.
    pub acquired: u64,
    /// Acquire attempts answered `contended`.
    pub contended: u64,
    /// Acquire attempts that failed (closed).
    pub acquire_failed: u64,
    /// Acquire attempts with unknown outcome.
    pub acquire_indeterminate: u64,
    /// Jobs that gave up with `retry-later`.
    pub retry_later: u64,
    /// Mean acquire attempts per acquisition.
    pub attempts_per_acquisition: f64,
    /// Acquire wait (first attempt to held), 50th percentile.
    pub wait_ms_p50: u64,
    /// 90th percentile.
    pub wait_ms_p90: u64,
    /// 99th percentile.
    pub wait_ms_p99: u64,
    /// Largest wait.
    pub wait_ms_max: u64,
    /// Hold (acquire invoke to release completion), 50th percentile.
    pub hold_ms_p50: u64,
    /// Longest hold.
    pub hold_ms_max: u64,
    /// Confirmed renewals.
    pub renewals: u64,
    /// Renewals that found the lease gone.
    pub lease_losses: u64,
    /// Writes the store rejected as stale.
    pub fence_rejections: u64,
    /// Writes the store accepted.
    pub writes_accepted: u64,
    /// Acquisitions per simulated (or real) second of the run.
    pub acquisitions_per_sec: f64,
    /// Acquisitions per worker, for fairness.
    pub acquisitions_per_worker: BTreeMap<String, u64>,
    /// Redis connections in use (one per worker).
    pub connections: u64,
}

/// One scenario × protocol × world × seed: what happened and the verdicts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The scenario's name.
    pub scenario: String,
    /// The protocol's name.
    pub protocol: String,
    /// The world.
    pub world: WorldKind,
    /// The seed.
    pub seed: u64,
    /// The parameters it ran with.
    pub params: Vec<Param>,
    /// One verdict per property (empty when the run failed to run).
    pub verdicts: Vec<Verdict>,
    /// The recorded history (absent when the run failed to run).
    pub history: Option<History>,
    /// Figures of the run.
    pub metrics: Metrics,
    /// Why the run could not be judged, or why its script stopped early
    /// (then the verdicts judge the history up to that point).
    pub error: Option<String>,
    /// The command that replays this run exactly.
    pub replay: String,
}

impl RunRecord {
    /// Properties found violated.
    pub fn violated(&self) -> Vec<Property> {
        self.verdicts
            .iter()
            .filter(|v| v.status == Status::Violated)
            .map(|v| v.property)
            .collect()
    }

    /// Whether any property was violated (or the run broke).
    pub fn failed(&self) -> bool {
        self.error.is_some() || !self.violated().is_empty()
    }
}

/// The one line that replays a run with the CLI, and its `cargo test`
/// equivalent.
pub fn replay_line(
    scenario: &str,
    protocol: &str,
    world: WorldKind,
    seed: u64,
    schedule: Option<&str>,
) -> String {
    let world_flag = match world {
        WorldKind::Sim => String::new(),
        WorldKind::Real => " --world real".to_owned(),
    };
    let (flag, env) = match schedule {
        Some(s) => (
            format!(" --schedule '{s}'"),
            format!("{REPLAY_SCHEDULE_ENV}='{s}' "),
        ),
        None => (String::new(), String::new()),
    };
    // The real world re-runs a seed; only the simulation reproduces it.
    let file = match world {
        WorldKind::Sim => "scenarios",
        WorldKind::Real => "real_world",
    };
    format!(
        "redfence replay {scenario} --protocol {protocol}{world_flag} --seed {seed}{flag}   \
         (cargo test: {env}{REPLAY_SEED_ENV}={seed} cargo test -p redfence-scenarios \
         --test {file} {test})",
        test = test_name(scenario),
    )
}

/// The scenario test's name for `scenario` (kebab-case → snake_case).
pub fn test_name(scenario: &str) -> String {
    scenario.replace('-', "_")
}

/// Runs `scenario` against `protocol` on one seed in a world from `worlds`.
pub fn run_one(
    worlds: &dyn WorldFactory,
    scenario: &dyn Scenario,
    protocol: Arc<dyn Protocol>,
    seed: u64,
) -> RunRecord {
    let setup = scenario.setup();
    let mut params = setup.params();
    params.extend(scenario.params());
    let protocol_name = protocol.name().to_owned();
    let mut record = RunRecord {
        scenario: scenario.name().to_owned(),
        protocol: protocol_name.clone(),
        world: worlds.kind(),
        seed,
        params,
        verdicts: Vec::new(),
        history: None,
        metrics: Metrics::default(),
        error: None,
        replay: replay_line(
            scenario.name(),
            &protocol_name,
            worlds.kind(),
            seed,
            scenario.replay_schedule().as_deref(),
        ),
    };
    match execute(worlds, scenario, protocol, seed) {
        Ok((history, stats, stopped)) => {
            record.verdicts = check(&history);
            record.metrics = metrics(&history, &stats, setup.workers);
            record.history = Some(history);
            record.error = stopped;
        }
        Err(error) => record.error = Some(error.to_string()),
    }
    record
}

/// Runs the script and builds the history. A script that stops early (a
/// worker never reached a point it needed) still yields its history — a
/// broken protocol that starves a worker must be judged, not discarded —
/// with the reason as the third value.
fn execute(
    worlds: &dyn WorldFactory,
    scenario: &dyn Scenario,
    protocol: Arc<dyn Protocol>,
    seed: u64,
) -> Result<(History, Vec<JobStat>, Option<String>), ScenarioError> {
    let setup = scenario.setup();
    let config = setup.lock_config()?;
    let spec = WorldSpec {
        seed,
        workers: setup.workers,
        replica: setup.replica,
        lease_ms: setup.lease_ms,
        latency_ms: setup.latency_ms,
        duration_ms_max: setup.duration_ms_max,
        op_timeout_ms: setup.op_timeout_ms,
    };
    let mut world = worlds.build(&spec)?;
    let mut stage = Stage::new(
        world.as_mut(),
        protocol,
        config,
        RESOURCE,
        setup.tolerance_ms(),
    );
    let stopped = match scenario.run(&mut stage) {
        Ok(()) => None,
        Err(ScenarioError::Stuck(why)) => Some(format!("the script stopped early: {why}")),
        Err(other) => return Err(other),
    };
    let stats: Vec<JobStat> = (0..stage.workers())
        .flat_map(|w| stage.probe(w).stats())
        .collect();
    let history = stage.finish()?;
    Ok((history, stats, stopped))
}

/// The resource every scenario contends for.
pub const RESOURCE: &str = "account-7";

fn percentile(sorted: &[u64], pct: usize) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (sorted.len() * pct).div_ceil(100).max(1) - 1;
    sorted[rank.min(sorted.len() - 1)]
}

/// Figures from a history and the workers' job statistics.
pub fn metrics(history: &History, stats: &[JobStat], workers: usize) -> Metrics {
    let mut m = Metrics {
        jobs: stats.len() as u64,
        connections: workers as u64,
        ..Metrics::default()
    };
    let mut holds: Vec<u64> = Vec::new();
    let mut open: BTreeMap<&str, u64> = BTreeMap::new();
    let mut ops: Vec<_> = history.ops.iter().collect();
    ops.sort_by_key(|op| (op.invoke_ms, op.id));
    for op in ops {
        match (&op.kind, &op.outcome) {
            (OpKind::Acquire, Outcome::Ok(OkValue::Acquired { .. })) => {
                m.acquired += 1;
                *m.acquisitions_per_worker
                    .entry(op.worker.clone())
                    .or_default() += 1;
                if let Some(owner) = op.owner.as_deref() {
                    open.insert(owner, op.invoke_ms);
                }
            }
            (OpKind::Acquire, Outcome::Ok(_)) => m.contended += 1,
            (OpKind::Acquire, Outcome::Fail(_)) => m.acquire_failed += 1,
            (OpKind::Acquire, Outcome::Indeterminate(_)) => m.acquire_indeterminate += 1,
            (OpKind::Renew, Outcome::Ok(OkValue::Renewed)) => m.renewals += 1,
            (OpKind::Renew, Outcome::Ok(OkValue::RenewLost)) => m.lease_losses += 1,
            (OpKind::Write { .. }, Outcome::Ok(OkValue::WriteStale { .. })) => {
                m.fence_rejections += 1
            }
            (OpKind::Write { .. }, Outcome::Ok(OkValue::WriteAccepted)) => m.writes_accepted += 1,
            (OpKind::Release, _) => {
                if let (Some(owner), Some(done)) = (op.owner.as_deref(), op.complete_ms) {
                    if let Some(start) = open.remove(owner) {
                        holds.push(done.saturating_sub(start));
                    }
                }
            }
            _ => {}
        }
    }
    for worker in 0..workers {
        m.acquisitions_per_worker
            .entry(crate::world::worker_name(worker))
            .or_default();
    }
    let mut waits: Vec<u64> = stats.iter().filter_map(|s| s.wait_ms).collect();
    waits.sort_unstable();
    holds.sort_unstable();
    let attempts: u64 = stats
        .iter()
        .filter(|s| s.wait_ms.is_some())
        .map(|s| u64::from(s.attempts))
        .sum();
    m.retry_later = stats
        .iter()
        .filter(|s| s.report == crate::history::REPORT_RETRY_LATER)
        .count() as u64;
    if !waits.is_empty() {
        m.attempts_per_acquisition = attempts as f64 / waits.len() as f64;
    }
    m.wait_ms_p50 = percentile(&waits, 50);
    m.wait_ms_p90 = percentile(&waits, 90);
    m.wait_ms_p99 = percentile(&waits, 99);
    m.wait_ms_max = waits.last().copied().unwrap_or(0);
    m.hold_ms_p50 = percentile(&holds, 50);
    m.hold_ms_max = holds.last().copied().unwrap_or(0);
    if history.end_ms > 0 {
        m.acquisitions_per_sec = m.acquired as f64 * 1_000.0 / history.end_ms as f64;
    }
    m
}
