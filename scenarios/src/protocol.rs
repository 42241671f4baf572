//! The protocol under test: the trait every lock put through the scenarios
//! implements — the reference lock, the shipped mutants, and a team's own
//! lock — and the two levels it can plug in at.
//!
//! - **Step level** ([`Plug::Steps`], a [`Session`]): the harness drives
//!   the worker flow itself (retry with backoff, renew while working, write,
//!   release, report; see `driver`) and records every step, so a protocol
//!   only says what *one* step does on the wire. Good for small wire-level
//!   variants: the acquire script, the release's owner check, whether a
//!   renewal checks the owner, whether the store checks the fence.
//!   `examples/own_protocol.rs` plugs in here.
//! - **Whole-worker level** ([`Plug::Worker`], a [`JobRunner`]): the team's
//!   own code takes a [`Job`] and does everything — acquire with its own
//!   retries, its own renewal task, the fenced write, the release — with
//!   the handles the world gives it ([`WorkerEnv`]: Redis, store, owner
//!   tokens, jitter, clock, a spawner), and returns its report. The harness
//!   owns nothing of the flow; it observes what reaches the servers (see
//!   `whole_worker`). Bugs that live in a retry loop, a renewal task or the
//!   job flow can only be expressed here. The reference lock runs here,
//!   through `redfence-core`'s own `Worker`; `examples/whole_worker.rs`
//!   plugs in a team-style lock.

use async_trait::async_trait;
use redfence_core::LockConfig;

use crate::history::JobReport;
use crate::world::WorkerEnv;

/// A lock protocol: a name and, per worker, how it plugs in.
pub trait Protocol: Send + Sync {
    /// The protocol's kebab-case name (`reference`, `del-unlock`, …).
    fn name(&self) -> &str;

    /// One line on what the protocol does (for `redfence list`).
    fn describe(&self) -> &str;

    /// How one worker runs this protocol, over that worker's handles,
    /// configured by `config` (lease, renew interval, limits, retries,
    /// fence source): step by step under the harness's flow, or as a whole
    /// worker running its own flow.
    fn plug(&self, env: &WorkerEnv, config: &LockConfig) -> Plug;

    /// Whether the lock is kept on every one of the world's Redis masters
    /// (`WorkerEnv::masters`, Redlock) rather than on master 0 alone (the
    /// default). It says what the lock *is*, as its key scheme does; who
    /// held it is still decided from the servers: with `true`, by the
    /// majority of the masters (`redfence_history::majority`), else by
    /// master 0, the others being bystanders.
    fn spans_masters(&self) -> bool {
        false
    }

    /// What went wrong during the last run between the harness and
    /// processes the protocol started (a lock adapter that broke the
    /// protocol or did not exit cleanly), in words, taken so each run
    /// reports its own; `run_one` makes it the run's error. Protocols that
    /// run in the harness's own process have none.
    fn take_problems(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The level a protocol plugs in at (see the module doc).
pub enum Plug {
    /// The harness runs the flow; the session does each step.
    Steps(Box<dyn Session>),
    /// The protocol runs the whole flow of each job.
    Worker(Box<dyn JobRunner>),
}

impl Plug {
    /// The level's kebab-case name (`steps`, `whole-worker`), for reports.
    pub fn level(&self) -> &'static str {
        match self {
            Plug::Steps(_) => "steps",
            Plug::Worker(_) => "whole-worker",
        }
    }
}

/// One job, as the whole-worker level receives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// The protected resource (a resource name, not a key).
    pub resource: String,
    /// The job's idempotency key.
    pub job_id: String,
    /// How long the job's work inside the critical section takes; do it by
    /// awaiting [`Job::work`] while holding the lock.
    pub work_ms: u64,
}

impl Job {
    /// The job's work: waits `work_ms` on the world's clock.
    pub async fn work(&self) {
        tokio::time::sleep(std::time::Duration::from_millis(self.work_ms)).await;
    }

    /// The value the job writes: names the writer, the job and the fence,
    /// so the store's log reads as a story.
    pub fn value(&self, worker: &str, fence: Option<i64>) -> String {
        match fence {
            Some(fence) => format!("{worker} applied {} under fence {fence}", self.job_id),
            None => format!("{worker} applied {} without a fence", self.job_id),
        }
    }
}

/// A team's whole worker: runs one job end to end and says how it ended.
///
/// One runner serves a whole worker process, and a scenario may run
/// several of its jobs at once (`WorkerPlan::jobs_at_once`), as a service's
/// job tasks share one lock client: `run` takes `&self` and may be called
/// again before an earlier call has returned. State shared between jobs is
/// the runner's to guard — which is where bugs such as one owner token per
/// process live.
///
/// Use only the handles in the [`WorkerEnv`] it was made from: its Redis
/// connection, its store, its owner tokens (`env.tokens`: the harness tells
/// holders apart by them, and they are seeded in the simulation), its
/// jitter, its clock, and `env.spawner` for any task it starts (a renewal
/// task, say) — a task spawned any other way would keep running through a
/// stop-the-world pause and outlive a crash, which no real process does.
#[async_trait(?Send)]
pub trait JobRunner {
    /// Runs `job`: acquire (with whatever retries the lock does), work
    /// ([`Job::work`]) while holding, the protected write through the
    /// store, release; returns the job's report.
    async fn run(&self, job: &Job) -> JobReport;
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
