//! `redlock-master-restart`: a master crashes and restarts from a snapshot
//! taken before it granted the lock, so it forgets the lock and grants it
//! again — a second majority while the first holder still holds its own.
//!
//! Master `q-1` (the one both clients reach, see `redlock_sides`) keeps
//! snapshots only: one is taken at the start, while it holds nothing. The
//! first client (`w0`, masters `0..q`) acquires a bare majority and works;
//! the shared master is killed (`kill -9`: it loses what it held since the
//! snapshot) and restarted from that snapshot, without `w0`'s key. The
//! second client (`w1`, masters `q-1..N`) gathers a majority and writes;
//! then `w0` writes too. Fences stop that write; Redis' own remedy,
//! restarting a crashed master only after the longest lease
//! ([`RedlockMasterRestart::delayed`]), stops the second majority itself.

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
/// When the snapshot is taken.
const SNAPSHOT_AT_MS: u64 = 20;
/// With a delayed restart, how much longer than the lease the crashed
/// master stays down (Redis' advice: at least the longest TTL).
const DELAY_MARGIN_MS: u64 = 200;

/// See the module doc.
#[derive(Clone, Copy, Debug)]
pub struct RedlockMasterRestart {
    masters: usize,
    delayed: bool,
}

impl RedlockMasterRestart {
    /// The scenario over `masters` masters, the crashed one restarted at
    /// once.
    pub fn with_masters(masters: usize) -> Self {
        Self {
            masters,
            delayed: false,
        }
    }

    /// The same with Redis' remedy: the crashed master stays down for the
    /// lease and a margin before it restarts.
    pub fn delayed(masters: usize) -> Self {
        Self {
            masters,
            delayed: true,
        }
    }
}

impl Default for RedlockMasterRestart {
    fn default() -> Self {
        Self::with_masters(MASTERS_DEFAULT)
    }
}

impl Scenario for RedlockMasterRestart {
    fn name(&self) -> &'static str {
        names::scenario::REDLOCK_MASTER_RESTART
    }

    fn describe(&self) -> &'static str {
        "Redlock's persistence debate: w0 holds a bare majority of the masters; one of them \
         crashes (kill -9) and restarts from a snapshot taken before it granted the lock, so it \
         forgets the lock; w1, which reaches it and the masters w0 cannot, gathers a majority \
         and writes while w0 works on and writes after it. A fence checked by the store rejects \
         w0's write; restarting the crashed master only after the longest lease prevents the \
         second majority."
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
                "restarted-master",
                quorum(self.masters) - 1,
                "the master both clients reach, which crashes and restarts",
            ),
            Param::new(
                "delayed-restart",
                self.delayed,
                "whether it stays down for the lease before it restarts",
            ),
            Param::new("holder-work-ms", HOLDER_WORK_MS, "work of w0"),
        ]
    }

    fn run(&self, stage: &mut Stage<'_>) -> Result<(), ScenarioError> {
        let setup = self.setup();
        let on = |master, fault| Fault::OnMaster {
            master,
            fault: Box::new(fault),
        };
        // Snapshot-only persistence: the last snapshot predates the lock
        // (taken once the masters are up, a step into the run).
        stage.run_for(SNAPSHOT_AT_MS)?;
        stage.fault(on(quorum(self.masters) - 1, Fault::SnapshotRedis))?;
        let work_ms = (HOLDER_WORK_MS, SUCCESSOR_WORK_MS);
        let down_ms = self.delayed.then_some(setup.lease_ms + DELAY_MARGIN_MS);
        split_and_strike(stage, &setup, work_ms, |stage, shared| {
            stage.fault(on(shared, Fault::StopRedis))?;
            if let Some(down_ms) = down_ms {
                stage.run_for(down_ms)?;
            }
            stage.fault(on(shared, Fault::RestartRedis))?;
            Ok(())
        })
    }
}
