//! `reference`: redfence-core's lock, unchanged, as a [`Protocol`].
//!
//! Each step calls the library's own code: `LockClient::attempt` (the acquire
//! script with bounded re-asks after a lost reply), `LockClient::renew`
//! (compare-and-PEXPIRE), `LockClient::release` (compare-and-delete) and
//! `FencedStore::apply_job` (fence check, effect and completion in one
//! transaction). The renewal policy is the configuration's. This is the
//! protocol every scenario must pass.

use crate::names;
use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use redfence_core::{
    Attempt, FenceSourceKind, FencedStore, FencedWrite, JobId, JobWrite, Lease, LockClient,
    LockConfig, OwnerToken, Renewal,
};

use super::{lock_error, resource_name};
use crate::conn::RedisConn;
use crate::protocol::{Acquire, Held, Protocol, RenewalPolicy, Session, StepError, WriteResult};
use crate::world::WorkerEnv;

/// The reference lock (redfence-core).
#[derive(Clone, Copy, Debug, Default)]
pub struct Reference;

impl Protocol for Reference {
    fn name(&self) -> &str {
        names::protocol::REFERENCE
    }

    fn describe(&self) -> &str {
        "redfence-core's lock: fresh owner token, acquire + fence in one script, \
         compare-and-delete, bounded compare-and-renew, fence checked by the store"
    }

    fn session(&self, env: &WorkerEnv, config: &LockConfig) -> Box<dyn Session> {
        Box::new(ReferenceSession::new(env, config))
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
        let mut builder = LockClient::builder(env.redis.clone(), config.clone())
            .tokens(env.tokens.clone())
            .jitter(env.jitter.clone());
        if config.fence_source() == FenceSourceKind::Store {
            builder = builder.fence_source(env.store_fences.clone());
        }
        let client = builder
            .build()
            .expect("the world supplies the fence source the config names");
        Self {
            client,
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
