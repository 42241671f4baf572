//! `reference` and `reference-steps`: redfence-core's lock, unchanged, at
//! both plug-in levels.
//!
//! - `reference` is the code a team deploys: each job runs through
//!   `redfence_core::Worker::process` — `LockClient::acquire` (its own
//!   full-jitter retries under the acquire deadline), the renewal keeper in
//!   the job's task, `FencedStore::apply_job`, the compare-and-delete
//!   release — at the whole-worker level. Nothing of the flow is the
//!   harness's.
//! - `reference-steps` is the same library one step at a time under the
//!   harness's flow: `LockClient::attempt` (the acquire script with bounded
//!   re-asks after a lost reply), `LockClient::renew` (compare-and-PEXPIRE),
//!   `LockClient::release` and `FencedStore::apply_job`, with the
//!   configuration's renewal policy. The step-level mutants are built on
//!   its session.
//!
//! Both must pass every scenario.

use crate::names;
use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use redfence_core::{
    Attempt, FenceSourceKind, FencedStore, FencedWrite, JobId, JobWrite, Lease, LockClient,
    LockConfig, OwnerToken, ProcessOutcome, Renewal, ResourceName, Worker,
};

use super::{lock_error, resource_name};
use crate::conn::RedisConn;
use crate::history::JobReport;
use crate::protocol::{
    Acquire, Held, Job, JobRunner, Plug, Protocol, RenewalPolicy, Session, StepError, WriteResult,
};
use crate::world::WorkerEnv;

/// The reference lock (redfence-core), as deployed: `Worker::process`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reference;

impl Protocol for Reference {
    fn name(&self) -> &str {
        names::protocol::REFERENCE
    }

    fn describe(&self) -> &str {
        "redfence-core's Worker as deployed: fresh owner token, acquire + fence in one script \
         with jittered retries, renewal keeper in the job's task, fence checked by the store, \
         compare-and-delete"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        Plug::Worker(Box::new(ReferenceWorker::new(env, config)))
    }
}

/// The reference lock one step at a time, under the harness's flow.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReferenceSteps;

impl Protocol for ReferenceSteps {
    fn name(&self) -> &str {
        names::protocol::REFERENCE_STEPS
    }

    fn describe(&self) -> &str {
        "redfence-core's lock step by step under the harness's flow (the base of the \
         step-level mutants)"
    }

    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug {
        Plug::Steps(Box::new(ReferenceSession::new(env, config)))
    }
}

/// The library's lock client over `env`'s handles, configured by `config`.
pub(crate) fn lock_client(env: &WorkerEnv, config: &LockConfig) -> LockClient<RedisConn> {
    let mut builder = LockClient::builder(env.redis.clone(), config.clone())
        .tokens(env.tokens.clone())
        .jitter(env.jitter.clone());
    if config.fence_source() == FenceSourceKind::Store {
        builder = builder.fence_source(env.store_fences.clone());
    }
    builder
        .build()
        .expect("the world supplies the fence source the config names")
}

/// A worker running `redfence_core::Worker`, exactly as a service would.
pub struct ReferenceWorker {
    worker: Worker<RedisConn>,
    name: String,
}

impl ReferenceWorker {
    /// The library's worker over `env`'s handles.
    pub fn new(env: &WorkerEnv, config: &LockConfig) -> Self {
        Self {
            worker: Worker::new(lock_client(env, config), env.store.clone()),
            name: env.name.clone(),
        }
    }

    /// The library's worker this runs (a test holds the reference to it).
    pub fn worker(&self) -> &Worker<RedisConn> {
        &self.worker
    }
}

#[async_trait(?Send)]
impl JobRunner for ReferenceWorker {
    async fn run(&self, job: &Job) -> JobReport {
        let (Ok(resource), Ok(job_id)) = (
            ResourceName::new(job.resource.as_str()),
            JobId::new(job.job_id.as_str()),
        ) else {
            return JobReport::Failed;
        };
        let name = self.name.as_str();
        let outcome = self
            .worker
            .process(&resource, &job_id, |fence| async move {
                job.work().await;
                Ok(job.value(name, Some(fence.get())))
            })
            .await;
        match outcome {
            ProcessOutcome::Success { .. } => JobReport::Success,
            ProcessOutcome::AlreadyDone => JobReport::AlreadyDone,
            ProcessOutcome::RetryLater => JobReport::RetryLater,
            ProcessOutcome::OwnershipLost(_) => JobReport::OwnershipLost,
            ProcessOutcome::Failed(_) => JobReport::Failed,
        }
    }
}

/// A worker's reference session; also the base the mutants build on.
pub struct ReferenceSession {
    client: LockClient<RedisConn>,
    store: Arc<dyn FencedStore>,
    config: LockConfig,
    /// Leases by owner token: `Lease` is the library's proof of holding, and
    /// renew/release need it back.
    leases: BTreeMap<String, Lease>,
}

impl ReferenceSession {
    /// A session over `env`'s connections.
    pub fn new(env: &WorkerEnv, config: &LockConfig) -> Self {
        Self {
            client: lock_client(env, config),
            store: env.store.clone(),
            config: config.clone(),
            leases: BTreeMap::new(),
        }
    }

    fn lease(&self, held: &Held) -> Result<&Lease, StepError> {
        self.leases
            .get(&held.owner)
            .ok_or_else(|| StepError::Failed(format!("no lease for owner {}", held.owner)))
    }
}

#[async_trait(?Send)]
impl Session for ReferenceSession {
    fn next_owner(&mut self) -> String {
        self.client.next_owner_token().as_str().to_owned()
    }

    async fn acquire(&mut self, resource: &str, owner: &str) -> Result<Acquire, StepError> {
        let name = resource_name(resource)?;
        let token = OwnerToken::new(owner).map_err(|e| StepError::Failed(e.to_string()))?;
        match self.client.attempt(&name, &token).await {
            Ok(Attempt::Acquired(lease)) => {
                let held = Held {
                    resource: resource.to_owned(),
                    owner: owner.to_owned(),
                    fence: Some(lease.fence().get()),
                };
                // Bounded: a session holds at most the leases of its own
                // acquires, and `release` removes them.
                self.leases.insert(owner.to_owned(), lease);
                Ok(Acquire::Acquired(held))
            }
            Ok(Attempt::Contended) => Ok(Acquire::Contended),
            Err(e) => Err(lock_error(e)),
        }
    }

    async fn renew(&mut self, held: &Held, lease_ms: u64) -> Result<bool, StepError> {
        let lease = self.lease(held)?.clone();
        match self.client.renew(&lease, lease_ms).await {
            Ok(Renewal::Renewed { .. }) => Ok(true),
            Ok(Renewal::OwnerMismatch) => Ok(false),
            Err(e) => Err(lock_error(e)),
        }
    }

    async fn release(&mut self, held: &Held) -> Result<bool, StepError> {
        let lease = self.lease(held)?.clone();
        let released = self.client.release(&lease).await.map_err(lock_error);
        self.leases.remove(&held.owner);
        released
    }

    async fn write(
        &mut self,
        held: &Held,
        job_id: &str,
        value: &str,
    ) -> Result<WriteResult, StepError> {
        let lease = self.lease(held)?.clone();
        let job = JobWrite {
            job_id: JobId::new(job_id).map_err(|e| StepError::Failed(e.to_string()))?,
            write: FencedWrite {
                resource: lease.resource().clone(),
                fence: lease.fence(),
                owner: lease.owner().clone(),
                value: value.to_owned(),
            },
        };
        super::wire::job_result(self.store.apply_job(&job).await)
    }

    fn renewal(&self) -> RenewalPolicy {
        RenewalPolicy {
            interval_ms: self.config.renew_interval_ms(),
            lease_ms: self.config.lease_ms(),
            hold_ms_max: Some(self.config.hold_ms_max()),
            renewals_max: Some(self.config.renewals_max()),
        }
    }
}
