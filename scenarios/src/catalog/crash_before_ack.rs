//! `crash-before-ack`: a worker commits its write and crashes before it can
//! acknowledge the job to its queue. The queue redelivers; the second
//! delivery must find the job complete and apply nothing.

use crate::driver::Phase;
use crate::names;
use crate::property::Property;
use crate::scenario::{Param, Scenario, ScenarioError, Setup};
use crate::stage::Stage;

use super::crash_mid_mutation::{redelivery, JOB_ID};

/// See the module doc.
#[derive(Clone, Copy, Debug, Default)]
pub struct CrashBeforeAck;

impl Scenario for CrashBeforeAck {
    fn name(&self) -> &'static str {
        names::scenario::CRASH_BEFORE_ACK
    }

    fn describe(&self) -> &'static str {
        "Worker 0 commits its write, then crashes before acknowledging the job. The job \
         is redelivered to worker 1: the store must answer that it is already done, and \
         the effect must be applied once. A write without the idempotency check (or \
         without the fence check that comes with it) applies the job twice."
    }

    fn targets(&self) -> &'static [Property] {
        &[Property::ExactlyOnce]
    }

    fn setup(&self) -> Setup {
        let mut setup = Setup::default();
        setup.backoff.attempts_max = 60;
        setup
    }

    fn params(&self) -> Vec<Param> {
        vec![
            Param::new("job-id", JOB_ID, "the job delivered twice"),
            Param::new(
                "crash-at",
                "the write was answered, before the report",
                "when worker 0 crashes",
            ),
        ]
    }

    fn run(&self, stage: &mut Stage<'_>) -> Result<(), ScenarioError> {
        // Releasing: the write was answered and the unlock is on its way,
        // but the job was not acknowledged (reported) yet.
        redelivery(stage, &self.setup(), Phase::Releasing)
    }
}
