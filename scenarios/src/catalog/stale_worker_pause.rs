//! `stale-worker-pause`: a worker stops the world (a GC pause, a VM freeze)
//! while it holds the lease, its lease runs out, a successor takes over and
//! writes, and the stale worker wakes and writes with its old fence. Only
//! the store's fence check stands between that write and lost data; a lock
//! without fences has nothing there, and its stale write is accepted
//! (`unfenced-stale-write`).
//!
//! Two rounds. In the first the pause lands mid-job, so the stale write is
//! sent after the successor's. In the second it lands just as the write
//! step begins — between a fence read and a write, for a protocol that
//! checks the fence in the application.

use crate::driver::Phase;
use crate::names;
use crate::property::Property;
use crate::scenario::{Param, Scenario, ScenarioError, Setup};
use crate::stage::Stage;

use super::{jobs, plan, takeover, ResumeWhen};

/// Work of the victims: long enough to be paused in the middle.
const VICTIM_WORK_MS: u64 = 400;
/// Work of the successors.
const SUCCESSOR_WORK_MS: u64 = 200;

/// See the module doc.
#[derive(Clone, Copy, Debug, Default)]
pub struct StaleWorkerPause;

impl Scenario for StaleWorkerPause {
    fn name(&self) -> &'static str {
        names::scenario::STALE_WORKER_PAUSE
    }

    fn describe(&self) -> &'static str {
        "A worker is paused (stop-the-world) while holding the lease, longer than the \
         lease. A successor acquires, gets a higher fence and writes. The paused worker \
         wakes and writes with its old fence: the store must reject it, and the worker \
         must report ownership lost. A second round pauses a worker just as its write \
         begins, which breaks a fence check done in the application."
    }

    fn targets(&self) -> &'static [Property] {
        &[
            Property::FenceOrder,
            Property::StaleOwnerRejected,
            Property::UnfencedStaleWrite,
        ]
    }

    fn setup(&self) -> Setup {
        Setup {
            workers: 4,
            ..Setup::default()
        }
    }

    fn params(&self) -> Vec<Param> {
        vec![
            Param::new(
                "victim-work-ms",
                VICTIM_WORK_MS,
                "work of the paused workers",
            ),
            Param::new(
                "successor-work-ms",
                SUCCESSOR_WORK_MS,
                "work of the successors",
            ),
            Param::new(
                "pause",
                "until the successor is done",
                "how long a victim stays paused",
            ),
        ]
    }

    fn run(&self, stage: &mut Stage<'_>) -> Result<(), ScenarioError> {
        let setup = self.setup();
        stage.spawn(0, plan(&setup, jobs(0, 1, VICTIM_WORK_MS), 0))?;
        let successor = plan(&setup, jobs(1, 1, SUCCESSOR_WORK_MS), 0);
        takeover(
            stage,
            0,
            Phase::Holding,
            1,
            successor,
            ResumeWhen::SuccessorDone,
        )?;
        stage.spawn(2, plan(&setup, jobs(2, 1, VICTIM_WORK_MS), 0))?;
        let successor = plan(&setup, jobs(3, 1, SUCCESSOR_WORK_MS), 0);
        takeover(
            stage,
            2,
            Phase::Writing,
            3,
            successor,
            ResumeWhen::SuccessorDone,
        )
    }
}
