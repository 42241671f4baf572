//! `fence-rejected`: a worker's write is rejected by the store because its
//! fence is stale. It must take that as ownership lost — report it, drop
//! the job's lease, never retry the same fence — and carry on with its next
//! job under a fresh lease and fence.

use crate::driver::Phase;
use crate::names;
use crate::property::Property;
use crate::scenario::{Param, Scenario, ScenarioError, Setup};
use crate::stage::Stage;

use super::{jobs, plan, settle, takeover, ResumeWhen};

/// Jobs of the rejected worker: the first is rejected, the rest must succeed.
const JOBS: usize = 3;
/// Work inside the critical section.
const WORK_MS: u64 = 300;

/// See the module doc.
#[derive(Clone, Copy, Debug, Default)]
pub struct FenceRejected;

impl Scenario for FenceRejected {
    fn name(&self) -> &'static str {
        names::scenario::FENCE_REJECTED
    }

    fn describe(&self) -> &'static str {
        "Worker 0 is paused past its lease mid-job; worker 1 takes over and writes. \
         Worker 0 wakes and writes with its old fence: the store rejects it. Worker 0 \
         must report ownership lost for that job, never retry the stale fence, and \
         process its next jobs under fresh leases."
    }

    fn targets(&self) -> &'static [Property] {
        &[Property::StaleOwnerRejected, Property::FenceOrder]
    }

    fn setup(&self) -> Setup {
        Setup::default()
    }

    fn params(&self) -> Vec<Param> {
        vec![
            Param::new("jobs", JOBS, "jobs of the rejected worker"),
            Param::new("work-ms", WORK_MS, "work inside the critical section"),
        ]
    }

    fn run(&self, stage: &mut Stage<'_>) -> Result<(), ScenarioError> {
        let setup = self.setup();
        stage.spawn(0, plan(&setup, jobs(0, JOBS, WORK_MS), 0))?;
        let successor = plan(&setup, jobs(1, 1, WORK_MS), 0);
        takeover(
            stage,
            0,
            Phase::Holding,
            1,
            successor,
            ResumeWhen::SuccessorDone,
        )?;
        settle(stage)
    }
}
