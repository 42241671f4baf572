//! `lost-acquire-reply`: the acquire runs on Redis but its reply never
//! reaches the worker. Nobody knows who holds the lock: the worker must
//! either find out (re-ask with the same owner token, which the reference
//! acquire answers idempotently) or fail closed — and the lock it may hold
//! must not outlive its lease.

use crate::names;
use crate::property::Property;
use crate::scenario::{Param, Scenario, ScenarioError, Setup};
use crate::stage::Stage;
use crate::world::Fault;

use super::{jobs, plan, reach, settle, STEP_MS_MAX};
use crate::driver::{JobHold, Phase, StartGate, WorkerPlan};

/// Jobs per worker.
const JOBS: usize = 2;
/// Work inside the critical section.
const WORK_MS: u64 = 200;
/// How long the replies to worker 0 are lost: longer than one operation
/// timeout, shorter than the lease, so a re-ask finds the lease still there.
const DROP_MS: u64 = 250;
/// Pause before each of worker 0's jobs: the replies start to vanish in
/// the one before its second job. Longer than the harness takes to see the
/// first job end and put the fault in place on real servers (a poll plus a
/// Toxiproxy call per proxy: up to 60 ms measured in debug builds), so the
/// second acquire always starts after the replies are gone; at 50 ms it
/// sometimes started before, and the run tested nothing it meant to.
const START_DELAY_MS: u64 = 200;
/// Time after the run for a lock that never expires to show.
const TAIL_MS: u64 = 5_000;

/// See the module doc.
#[derive(Clone, Copy, Debug, Default)]
pub struct LostAcquireReply;

impl Scenario for LostAcquireReply {
    fn name(&self) -> &'static str {
        names::scenario::LOST_ACQUIRE_REPLY
    }

    fn describe(&self) -> &'static str {
        "Worker 0's second acquire runs on Redis but the reply is lost; a second worker \
         contends. The worker must re-ask with the same owner token (and be told the \
         lease is its own, with the same fence) or fail closed; either way no write \
         happens without a known lease, and a lock whose holder never learned of it \
         expires within its lease."
    }

    fn targets(&self) -> &'static [Property] {
        &[
            Property::FailClosed,
            Property::FenceUniqueness,
            Property::BoundedLiveness,
        ]
    }

    fn setup(&self) -> Setup {
        Setup::default()
    }

    fn params(&self) -> Vec<Param> {
        vec![
            Param::new("jobs-per-worker", JOBS, "jobs each worker processes"),
            Param::new("work-ms", WORK_MS, "work inside the critical section"),
            Param::new(
                "drop-ms",
                DROP_MS,
                "how long worker 0's Redis replies are lost",
            ),
            Param::new(
                "tail-ms",
                TAIL_MS,
                "time after the jobs for a stuck lock to show",
            ),
        ]
    }

    fn run(&self, stage: &mut Stage<'_>) -> Result<(), ScenarioError> {
        let setup = self.setup();
        // The second job waits for the fault (see JobHold): in the
        // simulation the fault is in place long before its start delay is
        // over; a loaded real machine was once slower, and the acquire the
        // loss was meant for got its answer.
        let hold = JobHold {
            job: 1,
            gate: StartGate::closed(),
        };
        let first = WorkerPlan {
            hold: hold.clone(),
            ..plan(&setup, jobs(0, JOBS, WORK_MS), START_DELAY_MS)
        };
        stage.spawn(0, first)?;
        // Worker 0's first job opens its connection and loads the lock's
        // scripts into Redis, as a running service has; the replies then
        // vanish while it waits to start its second job, so that job's
        // acquire runs on Redis and only its answer is lost.
        if !stage.run_until(STEP_MS_MAX, |s| !s.probe(0).stats().is_empty())? {
            return Err(ScenarioError::Stuck(
                "w0 never finished its first job".to_owned(),
            ));
        }
        stage.fault(Fault::DropRedisReplies(0))?;
        hold.gate.open();
        // The loss is timed from the acquire it is meant for, and the
        // contender arrives while that acquire's answer is lost.
        reach(stage, 0, Phase::Acquiring)?;
        stage.spawn(1, plan(&setup, jobs(1, JOBS, WORK_MS), 30))?;
        stage.run_for(DROP_MS)?;
        stage.fault(Fault::RestoreRedisReplies(0))?;
        settle(stage)?;
        stage.run_for(TAIL_MS)?;
        Ok(())
    }
}
