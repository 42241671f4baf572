//! Replaying a run of any protocol from code: what the replay line of a
//! team's own lock names, since `redfence replay` can rebuild only the
//! built-in protocols by name.
//!
//! Its own module because it reaches for the catalog, exploration's
//! schedules and the simulated world, all of which depend on `run.rs`.

use std::sync::Arc;

use crate::protocol::Protocol;
use crate::run::{RunRecord, WorldFactory};
use crate::scenario::Scenario;

/// Why [`replay`] could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// No scenario has that name.
    #[error("unknown scenario {0:?}; known: {known}", known = crate::names::scenario::ALL.join(", "))]
    UnknownScenario(String),
    /// `random-faults` without a schedule, or a schedule for another scenario.
    #[error("{0}")]
    Schedule(String),
    /// The schedule text does not parse.
    #[error(transparent)]
    BadSchedule(#[from] crate::explore::ScheduleError),
}

/// Replays one run of any protocol — a team's own lock included — in the
/// simulation: the scenario by name (`random-faults` with its schedule
/// text), the protocol as the caller builds it, the seed. This is the call a
/// replay line names for a protocol that is not built in; the same
/// arguments give the same record, byte for byte.
pub fn replay(
    scenario: &str,
    schedule: Option<&str>,
    protocol: Arc<dyn Protocol>,
    seed: u64,
) -> Result<RunRecord, ReplayError> {
    replay_in(
        &crate::sim_world::SimWorlds,
        scenario,
        schedule,
        protocol,
        seed,
    )
}

/// [`replay`] in a world from `worlds` (the real world re-runs the seed:
/// timing there is real, so the run is a new one).
pub fn replay_in(
    worlds: &dyn WorldFactory,
    scenario: &str,
    schedule: Option<&str>,
    protocol: Arc<dyn Protocol>,
    seed: u64,
) -> Result<RunRecord, ReplayError> {
    let random = crate::names::scenario::RANDOM_FAULTS;
    let scenario: Arc<dyn Scenario> = match (scenario, schedule) {
        (name, Some(text)) if name == random => Arc::new(crate::explore::RandomFaults {
            schedule: text.parse()?,
        }),
        (name, None) if name == random => {
            return Err(ReplayError::Schedule(format!(
                "{random} needs the schedule its replay line printed"
            )))
        }
        (name, Some(_)) => {
            return Err(ReplayError::Schedule(format!(
                "a schedule belongs to {random}, not {name}"
            )))
        }
        (name, None) => crate::catalog::by_name(name)
            .ok_or_else(|| ReplayError::UnknownScenario(name.to_owned()))?,
    };
    Ok(crate::run::run_one(
        worlds,
        scenario.as_ref(),
        protocol,
        seed,
    ))
}
