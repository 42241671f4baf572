//! `redlock-pause`: the classic of the debate — the holder of a Redlock
//! pauses (a GC pause, a VM freeze) in the middle of its work, after its
//! acquisition was counted and its validity computed; its keys expire on
//! every master; a successor gathers a majority, writes and finishes; the
//! paused holder wakes and writes. No count of masters and no clock
//! arithmetic can see a pause that came after them: only a fence checked
//! by the store rejects the write.
//!
//! Every worker reaches every master; nothing fails but the holder's
//! process.

use crate::driver::Phase;
use crate::names;
use crate::property::Property;
use crate::scenario::{Param, Scenario, ScenarioError, Setup};
use crate::stage::Stage;
use crate::world::Fault;

use super::redlock_sides::{setup, MASTERS_DEFAULT};
use super::{jobs, plan, reach};

/// Work of the paused holder.
const HOLDER_WORK_MS: u64 = 300;
/// How long after the holder is seen holding it is paused: past its
/// acquisition (the last `SET` replies, the validity arithmetic: a pause
/// inside them is caught by the algorithm's elapsed-time check), inside
/// its work.
const PAUSE_AFTER_MS: u64 = 150;
/// Work of the successor.
const SUCCESSOR_WORK_MS: u64 = 100;

/// See the module doc.
#[derive(Clone, Copy, Debug)]
pub struct RedlockPause {
    masters: usize,
}

impl RedlockPause {
    /// The scenario over `masters` masters.
    pub fn with_masters(masters: usize) -> Self {
        Self { masters }
    }
}

impl Default for RedlockPause {
    fn default() -> Self {
        Self::with_masters(MASTERS_DEFAULT)
    }
}

impl Scenario for RedlockPause {
    fn name(&self) -> &'static str {
        names::scenario::REDLOCK_PAUSE
    }

    fn describe(&self) -> &'static str {
        "Redlock's pause debate: w0 holds the lock on every master and is paused in the middle \
         of its work, after its acquisition was counted; its keys expire; w1 gathers a \
         majority, writes and finishes; w0 wakes and writes. Only a fence checked by the store rejects \
         w0's write."
    }

    fn targets(&self) -> &'static [Property] {
        &[
            Property::UnfencedStaleWrite,
            Property::StaleOwnerRejected,
            Property::FenceOrder,
        ]
    }

    fn setup(&self) -> Setup {
        setup(self.masters, 2)
    }

    fn params(&self) -> Vec<Param> {
        vec![
            Param::new("masters", self.masters, "independent Redis masters"),
            Param::new("holder-work-ms", HOLDER_WORK_MS, "work of the paused w0"),
            Param::new(
                "pause",
                "from 150 ms after w0 holds until w1 is done",
                "how long w0 stays paused",
            ),
        ]
    }

    fn run(&self, stage: &mut Stage<'_>) -> Result<(), ScenarioError> {
        let setup = self.setup();
        stage.spawn(0, plan(&setup, jobs(0, 1, HOLDER_WORK_MS), 0))?;
        reach(stage, 0, Phase::Holding)?;
        stage.run_for(PAUSE_AFTER_MS)?;
        stage.fault(Fault::PauseWorker(0))?;
        stage.spawn(1, plan(&setup, jobs(1, 1, SUCCESSOR_WORK_MS), 0))?;
        reach(stage, 1, Phase::Done)?;
        stage.fault(Fault::ResumeWorker(0))?;
        reach(stage, 0, Phase::Done)
    }
}
