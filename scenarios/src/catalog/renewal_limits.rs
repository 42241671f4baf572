//! `renewal-limits`: a job outlasts the maximum hold time. Renewal must stop
//! at the limit (the last renewal shortened so the lock ends at acquire +
//! max hold), the lease must run out, a waiting worker must get the lock,
//! and the overrunning worker's late write must be rejected by its fence.

use crate::names;
use crate::property::Property;
use crate::scenario::{Param, Scenario, ScenarioError, Setup};
use crate::stage::Stage;

use super::{jobs, plan, settle};

/// Work of the overrunning job: well past `hold_ms_max` (3000 ms).
const LONG_WORK_MS: u64 = 5_000;
/// Work of the waiting worker.
const WORK_MS: u64 = 200;

/// See the module doc.
#[derive(Clone, Copy, Debug, Default)]
pub struct RenewalLimits;

impl Scenario for RenewalLimits {
    fn name(&self) -> &'static str {
        names::scenario::RENEWAL_LIMITS
    }

    fn describe(&self) -> &'static str {
        "Worker 0's job runs 5 s, past the 3 s maximum hold. Its renewals must stop at \
         the limit so the lock ends on time; worker 1, waiting, then acquires and \
         writes; worker 0's late write is rejected by its fence. A protocol that renews \
         for as long as the job runs keeps the lock past every bound."
    }

    fn targets(&self) -> &'static [Property] {
        &[Property::RenewalSafety, Property::BoundedLiveness]
    }

    fn setup(&self) -> Setup {
        let mut setup = Setup::default();
        // Worker 1 must keep trying until the limit frees the lock.
        setup.backoff.attempts_max = 80;
        setup
    }

    fn params(&self) -> Vec<Param> {
        vec![
            Param::new("long-work-ms", LONG_WORK_MS, "work of the overrunning job"),
            Param::new("work-ms", WORK_MS, "work of the waiting worker"),
        ]
    }

    fn run(&self, stage: &mut Stage<'_>) -> Result<(), ScenarioError> {
        let setup = self.setup();
        stage.spawn(0, plan(&setup, jobs(0, 1, LONG_WORK_MS), 0))?;
        stage.spawn(1, plan(&setup, jobs(1, 1, WORK_MS), 200))?;
        settle(stage)
    }
}
