//! What one run *is* once it has run: the [`RunRecord`] (scenario, protocol,
//! world, seed, parameters, verdicts, history, figures, replay line) and the
//! vocabulary it is written in ([`WorldKind`], [`Param`], [`JobStat`]).
//!
//! Everything here is data a runner fills in and a report renders; the
//! figures ([`metrics`]) are computed from the history and the workers' job
//! statistics alone, so a report can recompute them from JSON.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::history::{History, JobReport, OkValue, OpKind, Outcome};
use crate::names::worker_name;
use crate::property::Property;
use crate::verdict::{Status, Verdict};

/// The environment variable through which `cargo test` replays one seed.
pub const REPLAY_SEED_ENV: &str = "REDFENCE_SEED";

/// The environment variable through which `cargo test` replays a schedule.
pub const REPLAY_SCHEDULE_ENV: &str = "REDFENCE_SCHEDULE";

/// What separates a replay line's command from the note after it (its
/// `cargo test` equivalent, or how to call a team's own lock): one constant
/// to write the line and to split it, so a narrow terminal can print the
/// command alone.
pub const REPLAY_NOTE_SEPARATOR: &str = "   (";

/// The name of the parameter that carries a run's fault schedule (random
/// faults), so what groups failures can name the schedule to replay.
pub const SCHEDULE_PARAM: &str = "schedule";

/// Which kind of world ran a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorldKind {
    /// The deterministic simulation.
    Sim,
    /// Real Redis and Postgres with injected network faults.
    Real,
}

impl WorldKind {
    /// The kebab-case name (`sim`, `real`).
    pub fn name(self) -> &'static str {
        match self {
            WorldKind::Sim => "sim",
            WorldKind::Real => "real",
        }
    }
}

/// One documented parameter of a scenario, with the value it runs with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Param {
    /// kebab-case name.
    pub name: String,
    /// The value, in words with its unit (e.g. `1000 ms`).
    pub value: String,
    /// What it means.
    pub doc: String,
}

impl Param {
    /// A parameter.
    pub fn new(name: &str, value: impl std::fmt::Display, doc: &str) -> Self {
        Self {
            name: name.to_owned(),
            value: value.to_string(),
            doc: doc.to_owned(),
        }
    }
}

/// One job's statistics, for load scenarios.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobStat {
    /// The job.
    pub job_id: String,
    /// Acquire attempts made.
    pub attempts: u32,
    /// From the first attempt to the lease being held; `None` if never held.
    pub wait_ms: Option<u64>,
    /// What the worker reported.
    pub report: JobReport,
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

/// How [`RunRecord::error`] begins when the script stopped early: a
/// worker never reached a point the script waits for (within its bound),
/// so the run is judged on what happened up to there and nothing after it
/// was tested. Reports tell it apart from a run that broke.
pub const STOPPED_EARLY: &str = "the script stopped early: ";

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

/// Whether `protocol` is built into redfence (the reference or a shipped
/// mutant), so that `redfence replay` can rebuild it by name.
pub fn is_built_in(protocol: &str) -> bool {
    protocol == crate::names::protocol::REFERENCE
        || protocol == crate::names::protocol::REFERENCE_STEPS
        || crate::names::mutant::ALL.contains(&protocol)
}

/// The one line that replays a run: for a built-in protocol, the CLI
/// command and its `cargo test` equivalent; for a team's own protocol, the
/// library call that runs *their* code again (the CLI knows only the
/// built-in protocols by name).
pub fn replay_line(
    scenario: &str,
    protocol: &str,
    world: WorldKind,
    seed: u64,
    schedule: Option<&str>,
) -> String {
    if !is_built_in(protocol) {
        let schedule = match schedule {
            Some(s) => format!("Some(\"{s}\")"),
            None => "None".to_owned(),
        };
        return match world {
            WorldKind::Sim => format!(
                "redfence_scenarios::replay::replay(\"{scenario}\", {schedule}, \
                 std::sync::Arc::new(YourLock), {seed}).unwrap(){REPLAY_NOTE_SEPARATOR}your own \
                 lock, here \
                 {protocol}: call this from your crate with your protocol's value; it returns \
                 the run's record, and \
                 redfence_scenarios::timeline::timeline(record.history.as_ref().unwrap()) \
                 prints it)"
            ),
            // The real world re-runs a seed; it cannot reproduce one.
            WorldKind::Real => format!(
                "redfence_scenarios::replay::replay_in(&redfence_scenarios::real_world::\
                 RealWorlds::from_env().unwrap(), \"{scenario}\", {schedule}, \
                 std::sync::Arc::new(YourLock), {seed}).unwrap(){REPLAY_NOTE_SEPARATOR}your own \
                 lock, here {protocol}, on real servers: re-runs the seed, timing is real)"
            ),
        };
    }
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
        "redfence replay {scenario} --protocol {protocol}{world_flag} --seed \
         {seed}{flag}{REPLAY_NOTE_SEPARATOR}cargo test: {env}{REPLAY_SEED_ENV}={seed} cargo test -p redfence-scenarios \
         --test {file} {test})",
        test = test_name(scenario),
    )
}

/// The command of a replay line, without the note after it.
pub fn replay_command(line: &str) -> &str {
    line.split_once(REPLAY_NOTE_SEPARATOR)
        .map_or(line, |(command, _)| command)
}

/// The scenario test's name for `scenario` (kebab-case → snake_case).
pub fn test_name(scenario: &str) -> String {
    scenario.replace('-', "_")
}

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
                // Per process: a worker's job slots count as the worker.
                *m.acquisitions_per_worker
                    .entry(crate::names::process_of(&op.worker).to_owned())
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
            .entry(worker_name(worker))
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
        .filter(|s| s.report == JobReport::RetryLater)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::{protocol, scenario};

    #[test]
    fn the_command_of_a_replay_line_is_the_cli_call_alone() {
        let line = replay_line(
            scenario::LATE_UNLOCK,
            protocol::REFERENCE,
            WorldKind::Sim,
            3,
            Some("300 pause w0 1200"),
        );
        assert_eq!(
            replay_command(&line),
            "redfence replay late-unlock --protocol reference --seed 3 --schedule '300 pause \
             w0 1200'"
        );
        assert!(line.ends_with("cargo test -p redfence-scenarios --test scenarios late_unlock)"));
        let own = replay_line(scenario::LATE_UNLOCK, "my-lock", WorldKind::Sim, 3, None);
        assert!(replay_command(&own).ends_with("std::sync::Arc::new(YourLock), 3).unwrap()"));
    }
}
