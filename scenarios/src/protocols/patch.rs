//! How a mutant is built: a base session with one step patched.
//!
//! Every mutant is "the reference with one thing broken". [`Patch`] has one
//! method per [`Session`] step, each defaulting to the base's step, so a
//! mutant's file holds only the step it breaks and nothing it could get
//! subtly different by copying. [`Patched`] puts a patch over a base.
//!
//! Two bases: [`ReferenceSession`](super::ReferenceSession) (redfence-core's own lock client), for
//! mutants that keep the reference's acquire; and [`Leaseless`], the
//! reference's renew, release and write done by hand from a [`Held`], for
//! mutants that take the lock their own way — the library hands its
//! `Lease` (which its renew, release and write need) only to its own
//! acquire.

use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use redfence_core::scripts::{RELEASE_LUA, RENEW_LUA};
use redfence_core::{
    Fence, FencedStore, FencedWrite, JobId, JobWrite, LockConfig, OwnerToken, TokenSource,
};
use redis::Script;

use super::resource_name;
use super::wire::{self, Wire};
use crate::protocol::{Acquire, Held, RenewalPolicy, Session, StepError, WriteResult};
use crate::world::WorkerEnv;

/// The reference's release script, compiled (hashed) once per process.
static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(RELEASE_LUA));
/// The reference's renew script, compiled once per process.
static RENEW: LazyLock<Script> = LazyLock::new(|| Script::new(RENEW_LUA));

/// One step (or a few) of a base session replaced; every method defaults
/// to the base's own step.
#[async_trait(?Send)]
pub trait Patch<B: Session + 'static> {
    /// See [`Session::next_owner`].
    fn next_owner(&mut self, base: &mut B) -> String {
        base.next_owner()
    }

    /// See [`Session::acquire`].
    async fn acquire(
        &mut self,
        base: &mut B,
        resource: &str,
        owner: &str,
    ) -> Result<Acquire, StepError> {
        base.acquire(resource, owner).await
    }

    /// See [`Session::renew`].
    async fn renew(&mut self, base: &mut B, held: &Held, lease_ms: u64) -> Result<bool, StepError> {
        base.renew(held, lease_ms).await
    }

    /// See [`Session::release`].
    async fn release(&mut self, base: &mut B, held: &Held) -> Result<bool, StepError> {
        base.release(held).await
    }

    /// See [`Session::write`].
    async fn write(
        &mut self,
        base: &mut B,
        held: &Held,
        job_id: &str,
        value: &str,
    ) -> Result<WriteResult, StepError> {
        base.write(held, job_id, value).await
    }

    /// See [`Session::renewal`].
    fn renewal(&self, base: &B) -> RenewalPolicy {
        base.renewal()
    }
}

/// A session: `patch` over `base`.
pub struct Patched<B, P> {
    base: B,
    patch: P,
}

impl<B, P> Patched<B, P>
where
    B: Session + 'static,
    P: Patch<B> + 'static,
{
    /// `patch` over `base`, boxed as the harness wants it.
    pub fn boxed(base: B, patch: P) -> Box<dyn Session> {
        Box::new(Self { base, patch })
    }
}

#[async_trait(?Send)]
impl<B, P> Session for Patched<B, P>
where
    B: Session + 'static,
    P: Patch<B> + 'static,
{
    fn next_owner(&mut self) -> String {
        self.patch.next_owner(&mut self.base)
    }

    async fn acquire(&mut self, resource: &str, owner: &str) -> Result<Acquire, StepError> {
        self.patch.acquire(&mut self.base, resource, owner).await
    }

    async fn renew(&mut self, held: &Held, lease_ms: u64) -> Result<bool, StepError> {
        self.patch.renew(&mut self.base, held, lease_ms).await
    }

    async fn release(&mut self, held: &Held) -> Result<bool, StepError> {
        self.patch.release(&mut self.base, held).await
    }

    async fn write(
        &mut self,
        held: &Held,
        job_id: &str,
        value: &str,
    ) -> Result<WriteResult, StepError> {
        self.patch.write(&mut self.base, held, job_id, value).await
    }

    fn renewal(&self) -> RenewalPolicy {
        self.patch.renewal(&self.base)
    }
}

/// The reference's steps by hand, over the same connections and scripts:
/// fresh owner tokens, compare-and-PEXPIRE, compare-and-delete, `apply_job`,
/// the configuration's renewal limits. It has no acquire of its own: a
/// patch over it brings one.
pub struct Leaseless {
    wire: Wire,
    store: Arc<dyn FencedStore>,
    tokens: Arc<dyn TokenSource>,
}

impl Leaseless {
    /// A base over `env`'s connections.
    pub fn new(env: &WorkerEnv, config: &LockConfig) -> Self {
        Self {
            wire: Wire::new(env, config),
            store: env.store.clone(),
            tokens: env.tokens.clone(),
        }
    }

    /// The worker's Redis path, for the patch's own acquire.
    pub fn wire(&self) -> &Wire {
        &self.wire
    }
}

#[async_trait(?Send)]
impl Session for Leaseless {
    fn next_owner(&mut self) -> String {
        self.tokens.next_token().as_str().to_owned()
    }

    async fn acquire(&mut self, _resource: &str, _owner: &str) -> Result<Acquire, StepError> {
        Err(StepError::Failed(
            "Leaseless has no acquire: the patch over it must bring its own".to_owned(),
        ))
    }

    async fn renew(&mut self, held: &Held, lease_ms: u64) -> Result<bool, StepError> {
        if lease_ms == 0 {
            // PEXPIRE 0 would delete the key: never a renewal.
            return Err(StepError::Failed("renewal of 0 ms refused".to_owned()));
        }
        let (lock_key, _) = self.wire.keys(&held.resource)?;
        let mut invocation = RENEW.prepare_invoke();
        invocation.key(lock_key).arg(&held.owner).arg(lease_ms);
        let reply = self.wire.invoke(&invocation).await?;
        Ok(wire::int("renew", &reply)? == 1)
    }

    async fn release(&mut self, held: &Held) -> Result<bool, StepError> {
        let (lock_key, _) = self.wire.keys(&held.resource)?;
        let mut invocation = RELEASE.prepare_invoke();
        invocation.key(lock_key).arg(&held.owner);
        let reply = self.wire.invoke(&invocation).await?;
        Ok(wire::int("release", &reply)? == 1)
    }

    async fn write(
        &mut self,
        held: &Held,
        job_id: &str,
        value: &str,
    ) -> Result<WriteResult, StepError> {
        let invalid = |e: redfence_core::InvalidInput| StepError::Failed(e.to_string());
        let job = JobWrite {
            job_id: JobId::new(job_id).map_err(invalid)?,
            write: FencedWrite {
                resource: resource_name(&held.resource)?,
                fence: Fence::new(wire::held_fence(held)?).map_err(invalid)?,
                owner: OwnerToken::new(held.owner.as_str()).map_err(invalid)?,
                value: value.to_owned(),
            },
        };
        wire::job_result(self.store.apply_job(&job).await)
    }

    fn renewal(&self) -> RenewalPolicy {
        let config = self.wire.config();
        RenewalPolicy {
            interval_ms: config.renew_interval_ms(),
            lease_ms: config.lease_ms(),
            hold_ms_max: Some(config.hold_ms_max()),
            renewals_max: Some(config.renewals_max()),
        }
    }
}
