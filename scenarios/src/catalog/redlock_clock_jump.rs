//! `redlock-clock-jump`: one master's clock jumps forward past the lease,
//! its copy of the lock expires at once, and a second client gathers a
//! majority from it and the masters the first could not reach — two
//! clients hold a majority each, by the algorithm's own count.
//!
//! The first client (`w0`) reaches the masters `0..q`, acquires on all of
//! them (a bare majority) and works for [`HOLDER_WORK_MS`]. The moment it
//! holds, master `q-1`'s clock jumps by [`JUMP_MS`] (more than the lease).
//! The second client (`w1`) reaches the masters `q-1..N`, acquires, works
//! briefly and writes. Then `w0`, well within its validity by its own
//! clock, writes too: a lock without fences has a stale write accepted;
//! with a store-checked fence it is rejected. On real servers the jump is
//! emulated (every key's remaining lifetime on that master is cut by it).

use crate::names;
use crate::property::Property;
use crate::scenario::{Param, Scenario, ScenarioError, Setup};
use crate::stage::Stage;
use crate::world::Fault;

use super::redlock_sides::{quorum, setup, split_and_strike, MASTERS_DEFAULT};

/// Work of the first holder: long enough for the second to write first
/// (on real servers a crash and restart alone take about 300 ms), short
/// enough to end before its first extension (`RENEW_INTERVAL_MS` after it
/// holds), which would find the lock lost.
const HOLDER_WORK_MS: u64 = 1_300;
/// Work of the second.
const SUCCESSOR_WORK_MS: u64 = 50;
/// The clock jump on the shared master: twice the lease.
const JUMP_MS: u64 = 2 * super::redlock_sides::LEASE_MS;

/// See the module doc.
#[derive(Clone, Copy, Debug)]
pub struct RedlockClockJump {
    masters: usize,
}

impl RedlockClockJump {
    /// The scenario over `masters` masters (3 to 7, odd or even).
    pub fn with_masters(masters: usize) -> Self {
        Self { masters }
    }
}

impl Default for RedlockClockJump {
    fn default() -> Self {
        Self::with_masters(MASTERS_DEFAULT)
    }
}

impl Scenario for RedlockClockJump {
    fn name(&self) -> &'static str {
        names::scenario::REDLOCK_CLOCK_JUMP
    }

    fn describe(&self) -> &'static str {
        "Redlock's clock debate: w0 holds a bare majority of the masters; the clock of one of \
         them jumps forward past the lease, so its copy expires at once; w1, which reaches that \
         master and the ones w0 cannot, gathers a majority and writes while w0, still within \
         its validity by its own clock, works on and writes after it. Only a fence checked by \
         the store rejects w0's write."
    }

    fn targets(&self) -> &'static [Property] {
        &[
            Property::UnfencedStaleWrite,
            Property::StaleOwnerRejected,
            Property::NoOverlappingHolders,
        ]
    }

    fn setup(&self) -> Setup {
        setup(self.masters, 2)
    }

    fn params(&self) -> Vec<Param> {
        vec![
            Param::new("masters", self.masters, "independent Redis masters"),
            Param::new(
                "jumped-master",
                quorum(self.masters) - 1,
                "the master both clients reach, whose clock jumps",
            ),
            Param::new("jump-ms", JUMP_MS, "how far its clock jumps forward"),
            Param::new("holder-work-ms", HOLDER_WORK_MS, "work of w0"),
        ]
    }

    fn run(&self, stage: &mut Stage<'_>) -> Result<(), ScenarioError> {
        let work_ms = (HOLDER_WORK_MS, SUCCESSOR_WORK_MS);
        split_and_strike(stage, &self.setup(), work_ms, |stage, shared| {
            stage.fault(Fault::OnMaster {
                master: shared,
                fault: Box::new(Fault::JumpRedisClock { jump_ms: JUMP_MS }),
            })?;
            Ok(())
        })
    }
}
