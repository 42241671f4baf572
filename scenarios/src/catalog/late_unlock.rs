//! `late-unlock`: a worker's unlock (and renewal) arrive after its lease has
//! ended and a successor holds the lock. Compare-and-delete and
//! compare-and-renew must leave the successor's lock alone.
//!
//! Two rounds. In the first a worker is paused mid-job past its lease and
//! wakes while the successor holds the lock: its next renewal and its
//! release hit the successor's key. In the second a worker is paused just
//! as its release begins — between a `GET` and a `DEL`, for a protocol that
//! releases in two steps — and wakes while its successor holds the lock.

use crate::driver::Phase;
use crate::names;
use crate::property::Property;
use crate::scenario::{Param, Scenario, ScenarioError, Setup};
use crate::stage::Stage;

use super::{jobs, plan, takeover, ResumeWhen};

/// Work of the first victim: it is still working when it wakes.
const VICTIM_WORK_MS: u64 = 2_500;
/// Work of the second victim, which is paused at its release.
const RELEASE_VICTIM_WORK_MS: u64 = 100;
/// Work of the successors: they still hold the lock when victims wake.
const SUCCESSOR_WORK_MS: u64 = 1_500;
/// Attempts a worker makes per acquisition: at the fixed 20 ms of a
/// no-backoff loop, 2 s of asking, twice the lease a successor waits out.
const SUCCESSOR_ATTEMPTS_MAX: u32 = 100;

/// See the module doc.
#[derive(Clone, Copy, Debug, Default)]
pub struct LateUnlock;

impl Scenario for LateUnlock {
    fn name(&self) -> &'static str {
        names::scenario::LATE_UNLOCK
    }

    fn describe(&self) -> &'static str {
        "A worker is paused past its lease and wakes while a successor holds the lock; \
         its renewal and its unlock arrive late. They must not extend or delete the \
         successor's lock. A second round pauses a worker just as its unlock begins, \
         which breaks an unlock done as GET, compare, then DEL."
    }

    fn targets(&self) -> &'static [Property] {
        &[Property::UnlockSafety, Property::RenewalSafety]
    }

    fn setup(&self) -> Setup {
        let mut setup = Setup {
            workers: 4,
            ..Setup::default()
        };
        // A successor keeps asking until the paused victim's lease (1 s) has
        // run out, whatever its retry loop: a fixed 20 ms loop spends the
        // default 30 attempts in ~0.7 s on real servers and gave up before
        // the lease ended (the simulation's slower round trips hid that).
        setup.backoff.attempts_max = SUCCESSOR_ATTEMPTS_MAX;
        setup
    }

    fn params(&self) -> Vec<Param> {
        vec![
            Param::new(
                "victim-work-ms",
                VICTIM_WORK_MS,
                "work of the worker paused mid-job",
            ),
            Param::new(
                "release-victim-work-ms",
                RELEASE_VICTIM_WORK_MS,
                "work of the worker paused at its unlock",
            ),
            Param::new(
                "successor-work-ms",
                SUCCESSOR_WORK_MS,
                "work of the successors",
            ),
            Param::new(
                "pause",
                "until the successor holds the lock",
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
            ResumeWhen::SuccessorHolding,
        )?;
        super::reach(stage, 1, Phase::Done)?;
        stage.spawn(2, plan(&setup, jobs(2, 1, RELEASE_VICTIM_WORK_MS), 0))?;
        let successor = plan(&setup, jobs(3, 1, SUCCESSOR_WORK_MS), 0);
        takeover(
            stage,
            2,
            Phase::Releasing,
            3,
            successor,
            ResumeWhen::SuccessorHolding,
        )?;
        super::settle(stage)
    }
}
