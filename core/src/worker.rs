//! The worker flow from the design article, end to end:
//!
//! ```text
//! acquire (deadline, full jitter) ── retry later ──▶ requeue the job
//!   └─▶ renewal keeper (same task) ─┐
//!       load input                  │ lease lost ─▶ ownership lost
//!       fenced write + completion ──┤ stale fence ─▶ ownership lost (never retried)
//!       success / already done      │
//!   finally: stop renewal, compare-and-delete
//! ```
//!
//! One deliberate strengthening of the article's pseudocode: the fenced write
//! and the idempotent completion record commit in *one* transaction
//! ([`FencedStore::apply_job`]). Done as two steps, a crash between them lets a
//! redelivered job apply its effect a second time under a newer fence.
//! Redis unavailable means fail closed: no protected write happens.

use std::future::Future;
use std::sync::Arc;

use redis::aio::ConnectionLike;

use crate::client::{AcquireOutcome, LockClient};
use crate::error::{LockError, StoreError};
use crate::fence::Fence;
use crate::keeper::{LeaseLost, LeaseSignal};
use crate::resource::ResourceName;
use crate::store::{FencedStore, FencedWrite, JobId, JobOutcome, JobWrite};
use crate::telemetry::{self, *};

/// Why a worker lost ownership.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnershipLost {
    /// The storage refused the fence: a newer owner has written.
    FenceRejected {
        /// The fence this worker held.
        fence: Fence,
        /// The storage's fence.
        last_fence: i64,
    },
    /// The keeper saw the lease go before the job finished.
    Lease(LeaseLost),
}

/// Why a job failed.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Redis failed or stayed indeterminate: failed closed, nothing written.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Loading the job's input failed.
    #[error("loading input failed: {0}")]
    Input(String),
    /// The resource does not exist in the store.
    #[error("resource not found in the store")]
    ResourceNotFound,
}

/// What [`Worker::process`] did.
#[derive(Debug)]
pub enum ProcessOutcome {
    /// Applied under this fence and recorded complete.
    Success {
        /// The fence the write carried.
        fence: Fence,
    },
    /// The job had completed before (redelivery); nothing applied.
    AlreadyDone,
    /// Contended past the deadline: requeue the job with a delay.
    RetryLater,
    /// Ownership was lost; the job must not be retried with the same fence.
    OwnershipLost(OwnershipLost),
    /// Failed; see the cause.
    Failed(JobError),
}

impl ProcessOutcome {
    /// Stable kebab-case name, for logs and histories.
    pub fn name(&self) -> &'static str {
        match self {
            ProcessOutcome::Success { .. } => "success",
            ProcessOutcome::AlreadyDone => "already-done",
            ProcessOutcome::RetryLater => "retry-later",
            ProcessOutcome::OwnershipLost(_) => "ownership-lost",
            ProcessOutcome::Failed(_) => "failed",
        }
    }
}

/// A worker: a lock client plus the fenced store it protects.
pub struct Worker<C> {
    lock: LockClient<C>,
    store: Arc<dyn FencedStore>,
}

impl<C> Worker<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// A worker over `lock` and `store`.
    pub fn new(lock: LockClient<C>, store: Arc<dyn FencedStore>) -> Self {
        Self { lock, store }
    }

    /// The lock client.
    pub fn lock(&self) -> &LockClient<C> {
        &self.lock
    }

    /// Runs job `job_id` on `resource`: `load_input` produces the value to
    /// write (it runs under the lease and gets the fence for its own fenced
    /// calls). See the module doc for the flow.
    pub async fn process<F, Fut>(
        &self,
        resource: &ResourceName,
        job_id: &JobId,
        load_input: F,
    ) -> ProcessOutcome
    where
        F: FnOnce(Fence) -> Fut,
        Fut: Future<Output = Result<String, String>>,
    {
        let rtype = &resource.resource_type_shared();
        let lease = match self.lock.acquire(resource).await {
            Ok(AcquireOutcome::Acquired(lease)) => lease,
            Ok(AcquireOutcome::RetryLater { .. }) => {
                telemetry::count(LOCK_JOBS_REQUEUED_TOTAL, rtype);
                return ProcessOutcome::RetryLater;
            }
            Err(e) => return ProcessOutcome::Failed(JobError::Lock(e)),
        };
        let fence = lease.fence();
        let owner = lease.owner().clone();
        let job = |signal: LeaseSignal| async move {
            if self.store.is_completed(job_id).await? {
                return Ok(ProcessOutcome::AlreadyDone);
            }
            let value = load_input(fence).await.map_err(JobError::Input)?;
            // Cooperative: stop early when the keeper already knows. The
            // lease can still end right after this check; the fence catches that.
            if let Some(lost) = signal.lost() {
                return Ok(ProcessOutcome::OwnershipLost(OwnershipLost::Lease(lost)));
            }
            let write = JobWrite {
                job_id: job_id.clone(),
                write: FencedWrite {
                    resource: resource.clone(),
                    fence,
                    owner: owner.clone(),
                    value,
                },
            };
            Ok::<_, JobError>(match self.store.apply_job(&write).await? {
                JobOutcome::Applied => ProcessOutcome::Success { fence },
                JobOutcome::AlreadyDone => ProcessOutcome::AlreadyDone,
                JobOutcome::NotFound => ProcessOutcome::Failed(JobError::ResourceNotFound),
                JobOutcome::Stale { last_fence } => {
                    telemetry::count(FENCE_REJECTED_TOTAL, rtype);
                    telemetry::count_with(LOCK_LEASE_LOST_TOTAL, rtype, "reason", "fence_rejected");
                    tracing::warn!(
                        resource_type = &**rtype,
                        resource_hash = %resource.id_hash(),
                        owner = %owner,
                        fence = fence.get(),
                        last_fence,
                        "fenced write rejected: ownership lost"
                    );
                    ProcessOutcome::OwnershipLost(OwnershipLost::FenceRejected {
                        fence,
                        last_fence,
                    })
                }
            })
        };
        let outcome = match self.lock.hold(&lease, job).await.output {
            Ok(outcome) => outcome,
            Err(e) => ProcessOutcome::Failed(e),
        };
        // Always: the keeper stopped when `hold` returned; give the lease back.
        // A failed release is harmless: the lease expires on its own.
        let _ = self.lock.release(&lease).await;
        outcome
    }
}
