//! What the Redlock scenarios share: a world of N independent masters and
//! the partitions that split workers between them.
//!
//! The debate over Redlock (Kleppmann's "How to do distributed locking",
//! antirez's "Is Redlock safe?") is told with two clients that each reach a
//! different set of masters, overlapping in one: the first reaches the
//! masters `0..q` (q = N/2 + 1, a bare majority), the second the masters
//! `q-1..N` (a bare majority too), and master `q-1` — the one both reach —
//! is where a fault (a clock jump, a restart that forgets) lets the second
//! gather its majority while the first still holds its own. With N = 5:
//! A B C | C D E, the example of the debate.
//!
//! Locks kept on master 0 alone run these scenarios too (the other masters
//! are bystanders for them): nothing here waits for a worker to hold the
//! lock except on master 0's side, so they run to the end and must pass.

use std::ops::Range;

use crate::driver::Phase;
use crate::scenario::{ScenarioError, Setup};
use crate::stage::Stage;
use crate::world::Fault;

use super::{jobs, plan, reach, settle, STEP_MS_MAX};

/// The masters a Redlock scenario runs with unless told otherwise: five,
/// as in the debate (three is the smallest that has a majority to split).
pub const MASTERS_DEFAULT: usize = 5;

/// Masters a lock needs to be held: a strict majority.
pub fn quorum(masters: usize) -> usize {
    masters / 2 + 1
}

/// The masters the first client reaches: a bare majority, `0..q`.
pub fn first_side(masters: usize) -> Range<usize> {
    0..quorum(masters)
}

/// The masters the second client reaches: a bare majority, `q-1..N`,
/// sharing master `q-1` with the first.
pub fn second_side(masters: usize) -> Range<usize> {
    quorum(masters) - 1..masters
}

/// The lease of the Redlock scenarios: long enough that a real master's
/// crash and restart (about 300 ms measured on local servers, kill -9 to
/// answering again) and a successor's acquisition and write all fit
/// before the first holder's first extension.
pub const LEASE_MS: u64 = 2_000;
/// Time between a Redlock holder's extensions: three quarters of the
/// lease (Redisson's watchdog uses a third; any interval below the lease
/// keeps the lock), so the window in which a holder has not yet found its
/// lock lost is wide enough on real servers too.
pub const RENEW_INTERVAL_MS: u64 = 1_500;

/// The setup of a Redlock scenario: `masters` independent masters (no
/// replica), `workers` workers, [`LEASE_MS`] and [`RENEW_INTERVAL_MS`].
pub fn setup(masters: usize, workers: usize) -> Setup {
    assert!(masters >= 3, "a majority to split needs three masters");
    Setup {
        workers,
        masters,
        lease_ms: LEASE_MS,
        renew_interval_ms: RENEW_INTERVAL_MS,
        ..Setup::default()
    }
}

/// Cuts `worker` off every master of `0..masters` outside `reach`.
pub fn reach_only(
    stage: &mut Stage<'_>,
    worker: usize,
    masters: usize,
    reach: Range<usize>,
) -> Result<(), ScenarioError> {
    for master in (0..masters).filter(|m| !reach.contains(m)) {
        stage.fault(Fault::OnMaster {
            master,
            fault: Box::new(Fault::PartitionRedis(worker)),
        })?;
    }
    Ok(())
}

/// Heals what [`reach_only`] cut.
pub fn reach_all(
    stage: &mut Stage<'_>,
    worker: usize,
    masters: usize,
    reach: Range<usize>,
) -> Result<(), ScenarioError> {
    for master in (0..masters).filter(|m| !reach.contains(m)) {
        stage.fault(Fault::OnMaster {
            master,
            fault: Box::new(Fault::HealRedis(worker)),
        })?;
    }
    Ok(())
}

/// Lets time pass until `worker` is done or a script step's bound passes:
/// a lock that cannot make progress here (one kept on master 0 alone, cut
/// off it) is not stuck, only waiting for the heal that follows.
pub fn until_done_or_bound(stage: &mut Stage<'_>, worker: usize) -> Result<(), ScenarioError> {
    stage.run_until(STEP_MS_MAX / 4, |s| {
        s.phase(worker) == crate::driver::Phase::Done
    })?;
    Ok(())
}

/// The story the clock-jump and restart scenarios share: `w0` reaches the
/// first side and holds a bare majority for `holder_work_ms`; the moment it
/// holds, `strike` hits the shared master (`quorum - 1`); `w1` reaches the
/// second side and runs a job of `successor_work_ms`; then both sides heal
/// and the run settles.
pub fn split_and_strike(
    stage: &mut Stage<'_>,
    setup: &Setup,
    (holder_work_ms, successor_work_ms): (u64, u64),
    strike: impl FnOnce(&mut Stage<'_>, usize) -> Result<(), ScenarioError>,
) -> Result<(), ScenarioError> {
    let n = setup.masters;
    reach_only(stage, 0, n, first_side(n))?;
    reach_only(stage, 1, n, second_side(n))?;
    stage.spawn(0, plan(setup, jobs(0, 1, holder_work_ms), 0))?;
    reach(stage, 0, Phase::Holding)?;
    strike(stage, quorum(n) - 1)?;
    stage.spawn(1, plan(setup, jobs(1, 1, successor_work_ms), 0))?;
    until_done_or_bound(stage, 1)?;
    reach_all(stage, 0, n, first_side(n))?;
    reach_all(stage, 1, n, second_side(n))?;
    settle(stage)
}
