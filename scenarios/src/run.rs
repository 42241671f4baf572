//! Running scenarios: one seed ([`run_one`]), and the serialisable result of
//! a run that reports render from ([`RunRecord`], [`Metrics`]).
//!
//! A run builds a fresh world from a [`WorldSpec`] (through a
//! [`WorldFactory`], so the same code drives the simulation and the real
//! world), runs the scenario's script against the protocol, judges the
//! history, and names the one command that replays it.

use std::sync::Arc;

use crate::checker::check;
use crate::driver::JobStat;
use crate::history::History;
use crate::protocol::Protocol;
use crate::scenario::{Scenario, ScenarioError};
use crate::stage::Stage;
use crate::world::{World, WorldError, WorldKind};

pub use redfence_history::record::{
    metrics, replay_line, test_name, Metrics, RunRecord, REPLAY_SCHEDULE_ENV, REPLAY_SEED_ENV,
};

/// How a world must be laid out for one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorldSpec {
    /// The run's seed (everything random derives from it in the simulation).
    pub seed: u64,
    /// Workers.
    pub workers: usize,
    /// Whether Redis has a replica.
    pub replica: bool,
    /// Redis masters (1, or several independent ones; master 0 is the
    /// primary).
    pub masters: usize,
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
            masters: 1,
            lease_ms: 1_000,
            latency_ms: (1, 3),
            duration_ms_max: 60_000,
            op_timeout_ms: 150,
        })
        .map(drop)
    }
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
    match execute(worlds, scenario, protocol.clone(), seed) {
        Ok((history, stats, stopped)) => {
            record.verdicts = check(&history);
            record.metrics = metrics(&history, &stats, setup.workers);
            record.history = Some(history);
            record.error = stopped;
        }
        Err(error) => record.error = Some(error.to_string()),
    }
    // A protocol's own processes that broke their side (a lock adapter):
    // the run did not test what it claims to, so it is an error, named.
    let problems = protocol.take_problems();
    if !problems.is_empty() {
        // The problems first: a broken adapter starves its worker, which
        // also stops the script early, and the run must read as broken,
        // not as stuck (`record::STOPPED_EARLY` is only a prefix).
        let mut errors = problems;
        errors.extend(record.error.take());
        record.error = Some(errors.join("; "));
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
        masters: setup.masters,
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
        Err(ScenarioError::Stuck(why)) => {
            Some(format!("{}{why}", redfence_history::record::STOPPED_EARLY))
        }
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
