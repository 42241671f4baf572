//! `mutual-exclusion`: several workers process jobs on one resource with no
//! fault at all. The baseline: one holder at a time, one fence per
//! acquisition, every job applied once, everyone served.

use crate::names;
use crate::property::Property;
use crate::scenario::{Param, Scenario, ScenarioError, Setup};
use crate::stage::Stage;

use super::{jobs, plan, settle};

/// Workers in this scenario.
const WORKERS: usize = 3;
/// Jobs per worker.
const JOBS: usize = 3;
/// Work inside the critical section.
const WORK_MS: u64 = 200;

/// See the module doc.
#[derive(Clone, Copy, Debug, Default)]
pub struct MutualExclusion;

impl Scenario for MutualExclusion {
    fn name(&self) -> &'static str {
        names::scenario::MUTUAL_EXCLUSION
    }

    fn describe(&self) -> &'static str {
        "Three workers process three jobs each on one resource, with no fault. The lock \
         must hand out one lease at a time with a fresh fence each, every job must be \
         applied exactly once, and every worker must get its turn. A static owner token \
         shows up here: two workers share one token, and the acquire script answers the \
         second one \"already yours\" with the first one's fence."
    }

    fn targets(&self) -> &'static [Property] {
        &[
            Property::FenceUniqueness,
            Property::FenceOrder,
            Property::ExactlyOnce,
            Property::BoundedLiveness,
        ]
    }

    fn setup(&self) -> Setup {
        Setup {
            workers: WORKERS,
            ..Setup::default()
        }
    }

    fn params(&self) -> Vec<Param> {
        vec![
            Param::new("jobs-per-worker", JOBS, "jobs each worker processes"),
            Param::new("work-ms", WORK_MS, "work inside the critical section"),
        ]
    }

    fn run(&self, stage: &mut Stage<'_>) -> Result<(), ScenarioError> {
        let setup = self.setup();
        for worker in 0..WORKERS {
            stage.spawn(worker, plan(&setup, jobs(worker, JOBS, WORK_MS), 0))?;
        }
        settle(stage)
    }
}
