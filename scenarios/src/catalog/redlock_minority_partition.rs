//! `redlock-minority-partition`: a worker cut off from a majority of the
//! masters must not hold the lock; the worker that reaches them all must.
//!
//! `w0` reaches only the masters `0..N-q` (a minority) and starts first,
//! so its `SET`s win there; `w1` reaches every master, takes the others
//! (a bare majority) and writes. A correct Redlock gives up on `w0`'s
//! minority (and unlocks it) until the partition heals, then runs `w0`'s
//! job. A quorum counted one short lets `w0` believe it holds the lock
//! and write beside `w1` — first, so no fence can stop it.

use crate::driver::{StartGate, WorkerPlan};
use crate::names;
use crate::property::Property;
use crate::scenario::{Param, Scenario, ScenarioError, Setup};
use crate::stage::Stage;

use super::redlock_sides::{
    quorum, reach_all, reach_only, setup, until_done_or_bound, MASTERS_DEFAULT,
};
use super::{jobs, plan, settle};

/// Work of `w0`'s job: short, so a `w0` that wrongly believes it holds
/// the lock writes before `w1` (whose higher fence would otherwise reject
/// it: the fence would hide the broken count).
const MINORITY_WORK_MS: u64 = 100;
/// Work of `w1`'s job.
const MAJORITY_WORK_MS: u64 = 300;
/// `w1` starts this much after `w0`'s job starts, so `w0`'s minority is
/// taken first.
///
/// Counted from `w0`'s job, not from the spawn (a [`StartGate`] that `w0`
/// opens and `w1` waits at once it is connected): a head start from the
/// spawn includes each worker's connection setup, and on a loaded real
/// machine a `w0` slow to connect asked after `w1` had every master; it
/// then retried only as the partition healed, and the half-quorum mutant
/// went uncaught (twice in 34 real-suite runs beside other load). In the
/// simulation both setups take the same time, so the gate is open by the
/// time `w1` looks and the schedule is what it was. Two other gates were
/// tried and left: counting from `w0`'s first acquire attempt as the stage
/// saw it (the real world then saw `set-without-nx` and `static-owner` hold
/// the lock at once where the simulation did not), and spawning `w1` once
/// `w0`'s key was on master 0 (which moved `w1` by its whole 160 ms
/// simulated setup and turned those two mutants' simulated verdicts).
const SECOND_START_DELAY_MS: u64 = 30;

/// See the module doc.
#[derive(Clone, Copy, Debug)]
pub struct RedlockMinorityPartition {
    masters: usize,
}

impl RedlockMinorityPartition {
    /// The scenario over `masters` masters.
    pub fn with_masters(masters: usize) -> Self {
        Self { masters }
    }

    /// The masters `w0` reaches: a minority.
    fn minority(&self) -> std::ops::Range<usize> {
        0..self.masters - quorum(self.masters)
    }
}

impl Default for RedlockMinorityPartition {
    fn default() -> Self {
        Self::with_masters(MASTERS_DEFAULT)
    }
}

impl Scenario for RedlockMinorityPartition {
    fn name(&self) -> &'static str {
        names::scenario::REDLOCK_MINORITY_PARTITION
    }

    fn describe(&self) -> &'static str {
        "A worker reaches only a minority of the Redlock masters and asks first; another \
         reaches them all and asks right after. The first must not hold the lock until the \
         partition heals: a quorum counted one short lets it write beside the second."
    }

    fn targets(&self) -> &'static [Property] {
        &[Property::FailClosed, Property::NoOverlappingHolders]
    }

    fn setup(&self) -> Setup {
        setup(self.masters, 2)
    }

    fn params(&self) -> Vec<Param> {
        vec![
            Param::new("masters", self.masters, "independent Redis masters"),
            Param::new(
                "minority",
                self.minority().len(),
                "masters w0 reaches until the heal",
            ),
            Param::new("minority-work-ms", MINORITY_WORK_MS, "work of w0"),
            Param::new("majority-work-ms", MAJORITY_WORK_MS, "work of w1"),
        ]
    }

    fn run(&self, stage: &mut Stage<'_>) -> Result<(), ScenarioError> {
        let setup = self.setup();
        let n = self.masters;
        reach_only(stage, 0, n, self.minority())?;
        let gate = StartGate::closed();
        let first = WorkerPlan {
            opens: gate.clone(),
            ..plan(&setup, jobs(0, 1, MINORITY_WORK_MS), 0)
        };
        stage.spawn(0, first)?;
        let second = WorkerPlan {
            waits_for: gate,
            ..plan(&setup, jobs(1, 1, MAJORITY_WORK_MS), SECOND_START_DELAY_MS)
        };
        stage.spawn(1, second)?;
        until_done_or_bound(stage, 1)?;
        reach_all(stage, 0, n, self.minority())?;
        settle(stage)
    }
}
