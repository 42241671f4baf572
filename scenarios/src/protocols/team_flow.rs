//! `TeamFlow`: a whole-worker flow the way services commonly write one —
//! the base of the whole-worker mutants, whose bugs live in the flow.
//!
//! Each job: draw an owner token; try `LockClient::attempt` (the reference
//! acquire script, with its bounded re-asks) in a retry loop of the flow's
//! own — exponential backoff with full jitter (or, turned wrong, a fixed
//! delay), at most `attempts_max` tries; once held, **spawn** a renewal task beside the job
//! (`env.spawner`) that calls `LockClient::renew` every `renew_interval_ms`
//! and stops at the hold limit, shortening its last renewal to end there;
//! do the job's work; if the renewal task saw the lease go, report
//! ownership lost; else write through `FencedStore::apply_job` with the
//! lease's fence; stop the renewal task; release with `LockClient::release`.
//!
//! With [`Knobs::correct`] this flow passes every scenario — a second,
//! independently written correct worker beside `reference` (a test checks
//! it). Each mutant turns one knob the way real services get it wrong.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use redfence_core::{
    Attempt, FencedStore, FencedWrite, Jitter, JobId, JobOutcome, JobWrite, LockClient, LockConfig,
    OwnerToken, Renewal, ResourceName,
};

use crate::conn::RedisConn;
use crate::history::JobReport;
use crate::protocol::{Job, JobRunner};
use crate::world::{Spawner, WorkerEnv};

/// The ways a team flow can be set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Knobs {
    /// Time between renewals.
    pub renew_interval_ms: u64,
    /// `None`: retry after an exponential backoff with full jitter, as the
    /// design article asks. `Some(ms)`: retry after this fixed delay, no
    /// growth and no jitter.
    pub fixed_retry_ms: Option<u64>,
    /// `false`: a fresh owner token per job, as the design article asks.
    /// `true`: one token drawn when the worker starts, used by every job.
    pub token_per_process: bool,
}

impl Knobs {
    /// The flow done right: renew at the configuration's interval, jitter.
    pub fn correct(config: &LockConfig) -> Self {
        Self {
            renew_interval_ms: config.renew_interval_ms(),
            fixed_retry_ms: None,
            token_per_process: false,
        }
    }
}

/// One worker's team flow.
pub struct TeamFlow {
    client: LockClient<RedisConn>,
    store: Arc<dyn FencedStore>,
    jitter: Arc<dyn Jitter>,
    spawner: Spawner,
    config: LockConfig,
    knobs: Knobs,
    name: String,
    /// The one token of a process-wide identity (`token_per_process`).
    process_owner: Option<OwnerToken>,
}

impl TeamFlow {
    /// The flow over `env`'s handles, set up by `knobs`.
    pub fn new(env: &WorkerEnv, config: &LockConfig, knobs: Knobs) -> Self {
        let client = super::reference::lock_client(env, config);
        let process_owner = knobs.token_per_process.then(|| client.next_owner_token());
        Self {
            // The library's own wire calls; the flow around them is the team's.
            client,
            process_owner,
            store: env.store.clone(),
            jitter: env.jitter.clone(),
            spawner: env.spawner.clone(),
            config: config.clone(),
            knobs,
            name: env.name.clone(),
        }
    }

    /// The pause before retry `attempt` (0-based).
    fn backoff_ms(&self, attempt: u32) -> u64 {
        if let Some(delay_ms) = self.knobs.fixed_retry_ms {
            return delay_ms;
        }
        let window_ms = redfence_core::backoff::backoff_window_ms(
            self.config.backoff_base_ms(),
            self.config.backoff_cap_ms(),
            attempt,
        );
        self.jitter.draw_ms(window_ms)
    }
}

#[async_trait(?Send)]
impl JobRunner for TeamFlow {
    async fn run(&self, job: &Job) -> JobReport {
        let (Ok(resource), Ok(job_id)) = (
            ResourceName::new(job.resource.as_str()),
            JobId::new(job.job_id.as_str()),
        ) else {
            return JobReport::Failed;
        };
        let owner = match &self.process_owner {
            Some(owner) => owner.clone(),
            None => self.client.next_owner_token(),
        };
        let mut lease = None;
        // Bounded by the configured attempts.
        for attempt in 0..self.config.attempts_max() {
            match self.client.attempt(&resource, &owner).await {
                Ok(Attempt::Acquired(held)) => {
                    lease = Some(held);
                    break;
                }
                Ok(Attempt::Contended) => {
                    let pause_ms = self.backoff_ms(attempt);
                    tokio::time::sleep(Duration::from_millis(pause_ms)).await;
                }
                // Fail closed: nothing is written without a lease.
                Err(_) => return JobReport::Failed,
            }
        }
        let Some(lease) = lease else {
            return JobReport::RetryLater;
        };

        let lost = Rc::new(Cell::new(false));
        let renewal = {
            let (client, lease, lost) = (self.client.clone(), lease.clone(), lost.clone());
            let interval = Duration::from_millis(self.knobs.renew_interval_ms);
            let (lease_ms, hold_ms_max) = (self.config.lease_ms(), self.config.hold_ms_max());
            let renewals_max = self.config.renewals_max();
            self.spawner.spawn(async move {
                let started = tokio::time::Instant::now();
                // Bounded by the renewal limit.
                for _ in 0..renewals_max {
                    tokio::time::sleep(interval).await;
                    let held_ms = started.elapsed().as_millis() as u64;
                    let left_ms = hold_ms_max.saturating_sub(held_ms);
                    if left_ms == 0 {
                        return;
                    }
                    match client.renew(&lease, lease_ms.min(left_ms)).await {
                        Ok(Renewal::Renewed { .. }) => {}
                        Ok(Renewal::OwnerMismatch) => {
                            lost.set(true);
                            return;
                        }
                        // Try again at the next interval.
                        Err(_) => {}
                    }
                }
            })
        };

        job.work().await;
        let report = if lost.get() {
            JobReport::OwnershipLost
        } else {
            let write = JobWrite {
                job_id,
                write: FencedWrite {
                    resource: resource.clone(),
                    fence: lease.fence(),
                    owner: lease.owner().clone(),
                    value: job.value(&self.name, Some(lease.fence().get())),
                },
            };
            match self.store.apply_job(&write).await {
                Ok(JobOutcome::Applied) => JobReport::Success,
                Ok(JobOutcome::AlreadyDone) => JobReport::AlreadyDone,
                Ok(JobOutcome::Stale { .. }) => JobReport::OwnershipLost,
                Ok(JobOutcome::NotFound) | Err(_) => JobReport::Failed,
            }
        };
        renewal.abort();
        // Best effort: a lease that is not released expires.
        let _ = self.client.release(&lease).await;
        report
    }
}
