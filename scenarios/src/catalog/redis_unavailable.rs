//! `redis-unavailable`: Redis cannot grant locks — first its fence counter
//! is broken (an operator wrote a non-number into it), then the server is
//! down — and comes back empty. Every worker must fail closed while it
//! cannot lock: no protected write without a lease, and no lock left behind
//! by an acquire that failed. After the restart, work resumes.

use crate::driver::{WorkerPlan, Workload};
use crate::names;
use std::time::Duration;

use crate::property::Property;
use crate::scenario::{Param, Scenario, ScenarioError, Setup};
use crate::stage::Stage;
use crate::world::{Fault, WorkerEnv};

use super::{jobs, plan, settle, until_a_holding_starts};

/// Workers processing jobs (a third, the operator, breaks the counter).
const WORKERS: usize = 2;
/// Jobs per worker: more than can run before the workload is closed (a
/// job lasts at least `GAP_MS`, and the close comes about 5 s in, later on
/// a slow machine), so no worker runs out of work before then.
const JOBS: usize = 40;
/// Work after the restart before the workload is closed: the same stretch
/// in both worlds. A fixed job count left the real world one acquisition
/// after the restart under load (its jobs fail as fast as the simulation's
/// while Redis cannot grant locks, but the outage and the restart take
/// longer there, so more of them are spent before it).
const AFTER_RESTART_MS: u64 = 1_000;
/// Work inside the critical section.
const WORK_MS: u64 = 50;
/// Pause before each job.
const GAP_MS: u64 = 300;
/// How long the fence counter is broken before the outage: longer than a
/// lease plus slack, so a lock left by a failed acquire runs out (and shows)
/// before the outage could take it away.
const BROKEN_MS: u64 = 1_500;
/// How long Redis is down.
const OUTAGE_MS: u64 = 2_000;

/// See the module doc.
#[derive(Clone, Copy, Debug, Default)]
pub struct RedisUnavailable;

impl Scenario for RedisUnavailable {
    fn name(&self) -> &'static str {
        names::scenario::REDIS_UNAVAILABLE
    }

    fn describe(&self) -> &'static str {
        "Redis cannot grant locks: first the fence counter holds a non-number (INCR \
         fails), then the server is down for 2 s and restarts empty. Workers must fail \
         closed — no write without a lease, no lock left behind by a failed acquire — \
         and resume once Redis is back. A protocol that sets the lock before asking for \
         the fence leaves a lock nobody holds."
    }

    fn targets(&self) -> &'static [Property] {
        &[Property::FailClosed, Property::BoundedLiveness]
    }

    fn setup(&self) -> Setup {
        Setup {
            workers: WORKERS + 1,
            ..Setup::default()
        }
    }

    fn params(&self) -> Vec<Param> {
        vec![
            Param::new(
                "jobs-per-worker",
                JOBS,
                "jobs each worker may process (more than run before the close)",
            ),
            Param::new(
                "after-restart-ms",
                AFTER_RESTART_MS,
                "work after the restart before no new job starts",
            ),
            Param::new("gap-ms", GAP_MS, "pause before each job"),
            Param::new(
                "broken-ms",
                BROKEN_MS,
                "how long the fence counter is broken",
            ),
            Param::new("outage-ms", OUTAGE_MS, "how long Redis is down"),
        ]
    }

    fn run(&self, stage: &mut Stage<'_>) -> Result<(), ScenarioError> {
        let setup = self.setup();
        let fence_key = fence_key(stage)?;
        // The operator: one bad write to the fence counter, through the
        // operator's own path, before any worker starts.
        stage.spawn_job(
            WORKERS,
            Box::new(move |env: WorkerEnv| {
                Box::pin(async move {
                    let mut conn = env.redis.clone();
                    let mut set = redis::cmd("SET");
                    set.arg(&fence_key).arg("not-a-number");
                    let write = set.exec_async(&mut conn);
                    let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
                })
            }),
        )?;
        if !stage.run_until(super::STEP_MS_MAX, |s| {
            s.world_done(WORKERS).unwrap_or(false)
        })? {
            return Err(ScenarioError::Stuck(
                "the operator never finished".to_owned(),
            ));
        }
        let workload = Workload::closable();
        for worker in 0..WORKERS {
            let plan = WorkerPlan {
                workload: workload.clone(),
                ..plan(&setup, jobs(worker, JOBS, WORK_MS), GAP_MS)
            };
            stage.spawn(worker, plan)?;
        }
        stage.run_for(BROKEN_MS)?;
        // A lock that needs no fence counter takes the lock here: stop
        // Redis just after it did, under its holder. Locks that need the
        // counter cannot; they wait out one job's length.
        until_a_holding_starts(stage, WORK_MS + GAP_MS)?;
        stage.fault(Fault::StopRedis)?;
        stage.run_for(OUTAGE_MS)?;
        stage.fault(Fault::RestartRedis)?;
        stage.run_for(AFTER_RESTART_MS)?;
        workload.close();
        settle(stage)
    }
}

fn fence_key(stage: &Stage<'_>) -> Result<String, ScenarioError> {
    let name = crate::protocols::resource_name(stage.resource())
        .map_err(|e| ScenarioError::Stuck(e.to_string()))?;
    Ok(stage.config().keys().fence_key(&name))
}
