//! `concurrent-jobs`: each worker process runs several jobs on one
//! resource at once, with no fault.
//!
//! Services rarely run one job per process: a worker pulls jobs into a
//! pool of tasks that share its Redis connection and its lock client. The
//! lock must then exclude a process's own jobs from each other as surely as
//! it excludes other processes — which it does only if every job acquires
//! under an owner token of its own and keeps its own renewals. Each job
//! slot is a holder in the history (`w0.0`, `w0.1`, …), so two jobs of one
//! process that both believe they hold the lock are caught like two
//! processes would be. The jobs outlast a lease, so every job's renewals
//! run beside the others'.
//!
//! Real bugs it shows: one owner token per process (or per thread, in an
//! async runtime where tasks share threads) with a re-entrant acquire, so
//! a second job is told "already yours"; renewal state keyed by resource,
//! so one job's release stops another's renewals.

use crate::driver::WorkerPlan;
use crate::names;
use crate::property::Property;
use crate::scenario::{Param, Scenario, ScenarioError, Setup};
use crate::stage::Stage;

use super::{jobs, plan, settle};

/// Worker processes in this scenario.
const WORKERS: usize = 2;
/// Jobs each worker runs at once.
const JOBS_AT_ONCE: usize = 2;
/// Jobs per worker (two after another in each slot).
const JOBS: usize = 4;
/// Work inside the critical section: longer than the lease, so every job
/// renews while the others wait or renew their own.
const WORK_MS: u64 = 1_200;
/// Attempts per job: four holders take turns of over a second each, so a
/// job may wait through three others' work.
const ATTEMPTS_MAX: u32 = 80;

/// See the module doc.
#[derive(Clone, Copy, Debug, Default)]
pub struct ConcurrentJobs;

impl Scenario for ConcurrentJobs {
    fn name(&self) -> &'static str {
        names::scenario::CONCURRENT_JOBS
    }

    fn describe(&self) -> &'static str {
        "Two worker processes each run two jobs at once on one resource (four jobs each, \
         every job longer than a lease), with no fault. Each job slot is a holder of its own: \
         a process's jobs must exclude each other as surely as processes do, each with its own \
         owner token, fence and renewals. A lock that uses one owner token per process lets a \
         second job in as \"already yours\"."
    }

    fn targets(&self) -> &'static [Property] {
        &[
            Property::NoOverlappingHolders,
            Property::FenceUniqueness,
            Property::LeaseContinuity,
            Property::ExactlyOnce,
        ]
    }

    fn setup(&self) -> Setup {
        let mut setup = Setup {
            workers: WORKERS,
            ..Setup::default()
        };
        setup.backoff.attempts_max = ATTEMPTS_MAX;
        setup
    }

    fn params(&self) -> Vec<Param> {
        vec![
            Param::new(
                "jobs-at-once",
                JOBS_AT_ONCE,
                "jobs each worker runs at once",
            ),
            Param::new("jobs-per-worker", JOBS, "jobs each worker processes"),
            Param::new("work-ms", WORK_MS, "work inside the critical section"),
        ]
    }

    fn run(&self, stage: &mut Stage<'_>) -> Result<(), ScenarioError> {
        let setup = self.setup();
        for worker in 0..WORKERS {
            let plan = WorkerPlan {
                jobs_at_once: JOBS_AT_ONCE,
                ..plan(&setup, jobs(worker, JOBS, WORK_MS), 0)
            };
            stage.spawn(worker, plan)?;
        }
        settle(stage)
    }
}
