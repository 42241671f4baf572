//! `crash-mid-mutation`: a worker crashes while its protected write is on
//! its way to the store — it may or may not have committed. The job is
//! redelivered to another worker, which must not apply it a second time.

use crate::driver::{JobSpec, Phase};
use crate::names;
use crate::property::Property;
use crate::scenario::{Param, Scenario, ScenarioError, Setup};
use crate::stage::Stage;
use crate::world::Fault;

use super::{plan, settle};

/// The job both workers process (the redelivery).
pub(super) const JOB_ID: &str = "job-redelivered";
/// Work inside the critical section.
const WORK_MS: u64 = 100;

/// See the module doc.
#[derive(Clone, Copy, Debug, Default)]
pub struct CrashMidMutation;

impl Scenario for CrashMidMutation {
    fn name(&self) -> &'static str {
        names::scenario::CRASH_MID_MUTATION
    }

    fn describe(&self) -> &'static str {
        "Worker 0 crashes while its write is on its way to the store: it may or may not \
         have committed. The job is redelivered to worker 1, which must not apply it a \
         second time (the completion record and the effect commit together), and must \
         get the lock once worker 0's lease runs out."
    }

    fn targets(&self) -> &'static [Property] {
        &[Property::ExactlyOnce, Property::BoundedLiveness]
    }

    fn setup(&self) -> Setup {
        let mut setup = Setup::default();
        setup.backoff.attempts_max = 60;
        setup
    }

    fn params(&self) -> Vec<Param> {
        vec![
            Param::new("job-id", JOB_ID, "the job delivered twice"),
            Param::new("work-ms", WORK_MS, "work inside the critical section"),
            Param::new("crash-at", "the write is sent", "when worker 0 crashes"),
        ]
    }

    fn run(&self, stage: &mut Stage<'_>) -> Result<(), ScenarioError> {
        redelivery(stage, &self.setup(), Phase::Writing)
    }
}

/// Worker 0 takes the job and crashes at `at`; worker 1 gets it redelivered.
pub(super) fn redelivery(
    stage: &mut Stage<'_>,
    setup: &Setup,
    at: Phase,
) -> Result<(), ScenarioError> {
    let job = || {
        vec![JobSpec {
            job_id: JOB_ID.to_owned(),
            work_ms: WORK_MS,
        }]
    };
    stage.spawn(0, plan(setup, job(), 0))?;
    // Armed, not polled for: the phase lasts about a millisecond on real
    // servers.
    stage.arm(0, at, Fault::CrashWorker(0))?;
    if !stage.run_until(super::STEP_MS_MAX, |s| s.world_done(0).unwrap_or(false))? {
        return Err(ScenarioError::Stuck(format!(
            "{} never reached {at:?} (it is {:?})",
            crate::names::worker_name(0),
            stage.phase(0)
        )));
    }
    stage.spawn(1, plan(setup, job(), 0))?;
    settle(stage)
}
