//! The scenario catalog: every scripted failure scenario, one file each,
//! and the helpers their scripts share.
//!
//! [`all`] lists them in a fixed order; names are kebab-case and used
//! unchanged by the CLI, reports, tests and docs.

use std::sync::Arc;

use crate::driver::{JobHold, JobSpec, Phase, StartGate, WorkerPlan, Workload};
use crate::run::RESOURCE;
use crate::scenario::{Scenario, ScenarioError, Setup};
use crate::stage::Stage;
use crate::world::{worker_name, Fault};

mod concurrent_jobs;
mod crash_after_acquire;
mod crash_before_ack;
mod crash_mid_mutation;
mod failover_counter_regression;
mod fence_rejected;
pub mod hotspot_load;
mod late_unlock;
mod lost_acquire_reply;
mod mutual_exclusion;
mod redis_unavailable;
mod redlock_clock_jump;
mod redlock_master_restart;
mod redlock_minority_partition;
mod redlock_pause;
pub mod redlock_sides;
mod renewal_limits;
mod stale_worker_pause;

pub use concurrent_jobs::ConcurrentJobs;
pub use crash_after_acquire::CrashAfterAcquire;
pub use crash_before_ack::CrashBeforeAck;
pub use crash_mid_mutation::CrashMidMutation;
pub use failover_counter_regression::FailoverCounterRegression;
pub use fence_rejected::FenceRejected;
pub use hotspot_load::HotspotLoad;
pub use late_unlock::LateUnlock;
pub use lost_acquire_reply::LostAcquireReply;
pub use mutual_exclusion::MutualExclusion;
pub use redis_unavailable::RedisUnavailable;
pub use redlock_clock_jump::RedlockClockJump;
pub use redlock_master_restart::RedlockMasterRestart;
pub use redlock_minority_partition::RedlockMinorityPartition;
pub use redlock_pause::RedlockPause;
pub use renewal_limits::RenewalLimits;
pub use stale_worker_pause::StaleWorkerPause;

/// Every scenario, in catalog order.
pub fn all() -> Vec<Arc<dyn Scenario>> {
    vec![
        Arc::new(MutualExclusion),
        Arc::new(StaleWorkerPause),
        Arc::new(LateUnlock),
        Arc::new(LostAcquireReply),
        Arc::new(RenewalLimits),
        Arc::new(CrashAfterAcquire),
        Arc::new(CrashMidMutation),
        Arc::new(CrashBeforeAck),
        Arc::new(RedisUnavailable),
        Arc::new(FenceRejected),
        Arc::new(FailoverCounterRegression),
        Arc::new(HotspotLoad::default()),
        Arc::new(ConcurrentJobs),
        Arc::new(RedlockClockJump::default()),
        Arc::new(RedlockMasterRestart::default()),
        Arc::new(RedlockPause::default()),
        Arc::new(RedlockMinorityPartition::default()),
    ]
}

/// The scenario called `name`.
pub fn by_name(name: &str) -> Option<Arc<dyn Scenario>> {
    all().into_iter().find(|s| s.name() == name)
}

/// Longest a script waits for one step of its own (a worker reaching a
/// phase, a successor finishing): far beyond any healthy step, so hitting
/// it means the protocol is stuck, which the script reports.
pub const STEP_MS_MAX: u64 = 20_000;

/// `count` jobs of `work_ms` for worker `index`, named `w<index>-job-<n>`.
pub fn jobs(index: usize, count: usize, work_ms: u64) -> Vec<JobSpec> {
    (0..count)
        .map(|n| JobSpec {
            job_id: format!("{}-job-{n}", worker_name(index)),
            work_ms,
        })
        .collect()
}

/// A plan on the scenario's resource with the setup's backoff.
pub fn plan(setup: &Setup, jobs: Vec<JobSpec>, start_delay_ms: u64) -> WorkerPlan {
    WorkerPlan {
        resource: RESOURCE.to_owned(),
        jobs,
        backoff: setup.backoff,
        start_delay_ms,
        jobs_at_once: 1,
        workload: Workload::default(),
        opens: StartGate::default(),
        waits_for: StartGate::default(),
        hold: JobHold::default(),
    }
}

/// Waits until worker `index` reaches `phase`, or says the run is stuck.
pub fn reach(stage: &mut Stage<'_>, index: usize, phase: Phase) -> Result<(), ScenarioError> {
    if stage.run_until_phase(index, phase, STEP_MS_MAX)? {
        return Ok(());
    }
    Err(ScenarioError::Stuck(format!(
        "{} never reached {phase:?} (it is {:?})",
        worker_name(index),
        stage.phase(index)
    )))
}

/// Lets time pass until some worker takes the lock anew (or `limit_ms`);
/// returns whether one did. A fault that takes the lock's server away is
/// aimed at the start of a holding, not at a clock time: at a fixed time
/// it lands in a holding on some runs and between jobs on others (on real
/// servers, where the workers' phase drifts from run to run), and a run
/// that lands between jobs shows nothing of what the fault does to a
/// holder. A new acquisition, not "someone holds": a holder seen at the
/// moment the wait starts may be at the end of its job, its write done.
pub fn until_a_holding_starts(stage: &mut Stage<'_>, limit_ms: u64) -> Result<bool, ScenarioError> {
    let workers = stage.workers();
    let total = |s: &Stage<'_>| -> u32 { (0..workers).map(|i| s.probe(i).acquisitions()).sum() };
    let before = total(stage);
    Ok(stage.run_until(limit_ms, |s| total(s) > before)?)
}

/// Waits until worker `index` has held the lease `count` times.
pub fn acquisitions(stage: &mut Stage<'_>, index: usize, count: u32) -> Result<(), ScenarioError> {
    if stage.run_until(STEP_MS_MAX, |s| s.probe(index).acquisitions() >= count)? {
        return Ok(());
    }
    Err(ScenarioError::Stuck(format!(
        "{} held the lease {} times, never {count}",
        worker_name(index),
        stage.probe(index).acquisitions()
    )))
}

/// Waits until every worker is done, or says the run is stuck.
pub fn settle(stage: &mut Stage<'_>) -> Result<(), ScenarioError> {
    if stage.run_until_done(STEP_MS_MAX * 3)? {
        return Ok(());
    }
    Err(ScenarioError::Stuck("workers did not finish".to_owned()))
}

/// When a paused victim is let go in a [`takeover`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResumeWhen {
    /// Once the successor has finished its job: the victim wakes to a free
    /// lock and a store that has moved on.
    SuccessorDone,
    /// Once the successor holds the lease: the victim wakes inside someone
    /// else's lease.
    SuccessorHolding,
}

/// The classic takeover: `victim` (already spawned, not yet at `at`) is
/// paused the moment it enters `at` (an armed fault, so even a
/// millisecond-long phase is hit exactly); its lease runs out; `successor`
/// is spawned with `successor_plan` and takes the lock; the victim resumes
/// per `resume` and finishes.
pub fn takeover(
    stage: &mut Stage<'_>,
    victim: usize,
    at: Phase,
    successor: usize,
    successor_plan: WorkerPlan,
    resume: ResumeWhen,
) -> Result<(), ScenarioError> {
    let fired = stage.probe(victim).fired();
    stage.arm(victim, at, Fault::PauseWorker(victim))?;
    if !stage.run_until(STEP_MS_MAX, |s| s.probe(victim).fired() > fired)? {
        return Err(ScenarioError::Stuck(format!(
            "{} never reached {at:?} (it is {:?})",
            worker_name(victim),
            stage.phase(victim)
        )));
    }
    stage.spawn(successor, successor_plan)?;
    match resume {
        ResumeWhen::SuccessorHolding => acquisitions(stage, successor, 1)?,
        ResumeWhen::SuccessorDone => reach(stage, successor, Phase::Done)?,
    }
    stage.fault(Fault::ResumeWorker(victim))?;
    reach(stage, victim, Phase::Done)
}
