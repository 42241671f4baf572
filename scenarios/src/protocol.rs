//! The protocol under test: the small trait every lock put through the
//! scenarios implements — the reference lock, the shipped mutants, and a
//! team's own lock (see `examples/own_protocol.rs`).
//!
//! Why this shape: the harness drives the worker flow itself (retry with
//! backoff, renew while working, write, release, report; see `driver`) and
//! records every step as an operation, so a protocol only says what *one*
//! step does on the wire. What differs between a correct lock and a broken
//! one — the acquire script, the release's owner check, whether a renewal
//! checks the owner, how long it keeps renewing, whether the store checks
//! the fence — is all here, and nothing else is.

use async_trait::async_trait;
use redfence_core::LockConfig;

use crate::world::WorkerEnv;

/// A lock protocol: a name and a per-worker session factory.
pub trait Protocol: Send + Sync {
    /// The protocol's kebab-case name (`reference`, `del-unlock`, …).
    fn name(&self) -> &str;

    /// One line on what the protocol does (for `redfence list`).
    fn describe(&self) -> &str;

    /// A session for one worker, over that worker's connections, configured
    /// by `config` (lease, renew interval, limits, fence source).
    fn session(&self, env: &WorkerEnv, config: &LockConfig) -> Box<dyn Session>;
}

/// A lease as the worker believes it holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// The resource name (not the key).
    pub resource: String,
    /// The owner token the acquire used.
    pub owner: String,
    /// The fence issued with the lease, if the protocol issues one.
    pub fence: Option<i64>,
}

/// One acquire attempt's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Acquire {
    /// The lease is ours.
    Acquired(Held),
    /// Another owner holds the lock.
    Contended,
}

/// What the store did with a protected write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteResult {
    /// The effect was applied (and the job completed, for job writes).
    Applied,
    /// The job had completed before; nothing was applied.
    AlreadyDone,
    /// Refused: the store had already seen `last_fence` (≥ this write's).
    Stale {
        /// The store's current fence.
        last_fence: i64,
    },
    /// The store does not know the resource.
    NotFound,
}

/// Why a step did not give a definite answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    /// The step definitely did not take effect (refused, unreachable before
    /// sending, script error).
    #[error("failed: {0}")]
    Failed(String),
    /// Unknown whether it took effect (timeout, lost reply).
    #[error("indeterminate: {0}")]
    Indeterminate(String),
}

/// How a protocol renews while a job runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenewalPolicy {
    /// Time between renewals.
    pub interval_ms: u64,
    /// Lease each renewal asks for.
    pub lease_ms: u64,
    /// Stop renewing once the lock would outlive acquire + this; `None`
    /// renews for as long as the job runs.
    pub hold_ms_max: Option<u64>,
    /// Most renewals per acquisition; `None` is unbounded.
    pub renewals_max: Option<u32>,
}

/// One worker's use of a protocol. Each method is one step on the wire; the
/// harness records its invoke and completion.
#[async_trait(?Send)]
pub trait Session {
    /// The owner token the next acquire will use (recorded before the
    /// acquire is sent, so an indeterminate acquire still names its owner).
    fn next_owner(&mut self) -> String;

    /// One acquire attempt with `owner`; no retry on contention.
    async fn acquire(&mut self, resource: &str, owner: &str) -> Result<Acquire, StepError>;

    /// Extends the lease to `lease_ms` from now; `Ok(false)` when the lock
    /// is no longer ours.
    async fn renew(&mut self, held: &Held, lease_ms: u64) -> Result<bool, StepError>;

    /// Gives the lock back; `Ok(true)` when it deleted the key.
    async fn release(&mut self, held: &Held) -> Result<bool, StepError>;

    /// The protected write of `job_id`'s effect, as this protocol makes it
    /// reach storage.
    async fn write(
        &mut self,
        held: &Held,
        job_id: &str,
        value: &str,
    ) -> Result<WriteResult, StepError>;

    /// How this protocol renews.
    fn renewal(&self) -> RenewalPolicy;
}
