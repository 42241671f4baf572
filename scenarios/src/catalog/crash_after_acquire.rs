//! `crash-after-acquire`: a worker's process dies right after its acquire
//! ran on Redis — before it could renew, write or unlock, and before it even
//! read the reply. Its lock must expire on its own within the lease, and a
//! waiting worker must then get it.
//!
//! The crash is timed with latency: worker 0's Redis path is slowed, and
//! the crash lands the moment the lock key appears on Redis, while the
//! reply is still on its way. An acquire made of two commands (SETNX, then
//! EXPIRE) is cut in half there.

use crate::names;
use crate::property::Property;
use crate::scenario::{Param, Scenario, ScenarioError, Setup};
use crate::stage::Stage;
use crate::world::Fault;

use super::{jobs, plan, settle};

/// One-way latency on worker 0's Redis path.
const LATENCY_MS: u64 = 60;
/// Work of the waiting worker.
const WORK_MS: u64 = 200;
/// Time after the jobs for a stuck lock to show.
const TAIL_MS: u64 = 5_000;

/// See the module doc.
#[derive(Clone, Copy, Debug, Default)]
pub struct CrashAfterAcquire;

impl Scenario for CrashAfterAcquire {
    fn name(&self) -> &'static str {
        names::scenario::CRASH_AFTER_ACQUIRE
    }

    fn describe(&self) -> &'static str {
        "Worker 0 crashes just after its acquire ran on Redis, before it could renew, \
         write or unlock. Its lock must expire within the lease and worker 1 must then \
         get it. A lock without a TTL — set with no expiry, or with the expiry sent as \
         a second command that never came — stays forever."
    }

    fn targets(&self) -> &'static [Property] {
        &[Property::BoundedLiveness]
    }

    fn setup(&self) -> Setup {
        let mut setup = Setup {
            // A first acquire on the slowed path takes three round trips
            // (EVALSHA, NOSCRIPT → SCRIPT LOAD, EVALSHA): within the timeout.
            op_timeout_ms: 600,
            ..Setup::default()
        };
        setup.backoff.attempts_max = 60;
        setup
    }

    fn params(&self) -> Vec<Param> {
        vec![
            Param::new(
                "latency-ms",
                LATENCY_MS,
                "one-way latency on worker 0's Redis path",
            ),
            Param::new(
                "crash-at",
                "the lock key appears on Redis",
                "when worker 0 crashes",
            ),
            Param::new("work-ms", WORK_MS, "work of the waiting worker"),
            Param::new(
                "tail-ms",
                TAIL_MS,
                "time after the jobs for a stuck lock to show",
            ),
        ]
    }

    fn run(&self, stage: &mut Stage<'_>) -> Result<(), ScenarioError> {
        let setup = self.setup();
        stage.fault(Fault::RedisLatency {
            worker: 0,
            latency_ms: LATENCY_MS,
        })?;
        stage.spawn(0, plan(&setup, jobs(0, 1, WORK_MS), 0))?;
        // The lock key exists, and its reply is still LATENCY_MS away.
        if !stage.run_until_locked(super::STEP_MS_MAX)? {
            return Err(ScenarioError::Stuck(
                "worker 0 never set the lock".to_owned(),
            ));
        }
        stage.fault(Fault::CrashWorker(0))?;
        stage.spawn(1, plan(&setup, jobs(1, 1, WORK_MS), 0))?;
        settle(stage)?;
        stage.run_for(TAIL_MS)?;
        Ok(())
    }
}
