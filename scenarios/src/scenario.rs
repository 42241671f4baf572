//! The scenario contract and the setup every scenario shares.
//!
//! A scenario is a script against a [`Stage`]: it says how many workers and
//! which topology it needs ([`Setup`]), then spawns workers, lets time pass
//! and injects faults. It never learns which world runs it. Each has one
//! kebab-case name, a paragraph on what it tests, and documented parameters
//! with their defaults ([`Param`]).

use redfence_core::{ConfigError, FenceSourceKind, LockConfig};

use crate::driver::Backoff;
use crate::property::Property;
use crate::stage::Stage;
use crate::world::WorldError;

pub use redfence_history::record::Param;

/// The world and lock configuration a scenario runs with.
///
/// Defaults (documented once): 2 workers, no replica, one Redis master,
/// lease 1000 ms, renew
/// every 300 ms, hold at most 3000 ms and 20 renewals, operation timeout
/// 150 ms, Redis-counter fences, backoff base 20 ms cap 200 ms with full
/// jitter and 30 attempts, link latency 1–3 ms, run bounded to 60 s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setup {
    /// Workers in the world.
    pub workers: usize,
    /// Whether the world has a Redis replica.
    pub replica: bool,
    /// Redis masters: 1, or several independent ones for locks that span
    /// them (Redlock); master 0 is the primary.
    pub masters: usize,
    /// Lease (TTL) per acquire or renew.
    pub lease_ms: u64,
    /// Time between renewals.
    pub renew_interval_ms: u64,
    /// Longest an owner may keep the lock by renewing.
    pub hold_ms_max: u64,
    /// Most renewals per acquisition.
    pub renewals_max: u32,
    /// Per-operation timeout (Redis and store).
    pub op_timeout_ms: u64,
    /// Where fences come from.
    pub fence_source: FenceSourceKind,
    /// Retry policy between contended attempts.
    pub backoff: Backoff,
    /// Link latency range, each way.
    pub latency_ms: (u64, u64),
    /// Hard bound on a run's (simulated) time.
    pub duration_ms_max: u64,
}

impl Default for Setup {
    fn default() -> Self {
        Self {
            workers: 2,
            replica: false,
            masters: 1,
            lease_ms: 1_000,
            renew_interval_ms: 300,
            hold_ms_max: 3_000,
            renewals_max: 20,
            op_timeout_ms: 150,
            fence_source: FenceSourceKind::RedisCounter,
            backoff: Backoff {
                base_ms: 20,
                cap_ms: 200,
                attempts_max: 30,
                jitter: true,
            },
            latency_ms: (1, 3),
            duration_ms_max: 60_000,
        }
    }
}

impl Setup {
    /// The lock configuration this setup implies.
    pub fn lock_config(&self) -> Result<LockConfig, ConfigError> {
        LockConfig::builder()
            .lease_ms(self.lease_ms)
            .renew_interval_ms(self.renew_interval_ms)
            .hold_ms_max(self.hold_ms_max)
            .renewals_max(self.renewals_max)
            .op_timeout_ms(self.op_timeout_ms)
            .fence_source(self.fence_source)
            .backoff_base_ms(self.backoff.base_ms)
            .backoff_cap_ms(self.backoff.cap_ms)
            .attempts_max(self.backoff.attempts_max)
            .acquire_deadline_ms(self.lease_ms * 10)
            .build()
    }

    /// Slack the checker grants time bounds: an operation timeout plus a
    /// round trip at the highest latency, plus a little for ticks.
    pub fn tolerance_ms(&self) -> u64 {
        self.op_timeout_ms + 2 * self.latency_ms.1 + 10
    }

    /// The setup's parameters in words, for reports.
    pub fn params(&self) -> Vec<Param> {
        let source = self.fence_source.name();
        vec![
            Param::new(
                "workers",
                self.workers,
                "workers contending for the resource",
            ),
            Param::new("replica", self.replica, "whether Redis has a replica"),
            Param::new("lease-ms", self.lease_ms, "lease per acquire or renew"),
            Param::new(
                "renew-interval-ms",
                self.renew_interval_ms,
                "time between renewals",
            ),
            Param::new("hold-ms-max", self.hold_ms_max, "longest hold by renewing"),
            Param::new(
                "renewals-max",
                self.renewals_max,
                "most renewals per acquisition",
            ),
            Param::new("op-timeout-ms", self.op_timeout_ms, "per-operation timeout"),
            Param::new("fence-source", source, "where fences come from"),
            Param::new(
                "backoff-jitter",
                self.backoff.jitter,
                "full jitter between attempts",
            ),
        ]
    }
}

/// What went wrong running a scenario (not a property violation: those are
/// verdicts).
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The world failed.
    #[error(transparent)]
    World(#[from] WorldError),
    /// The scenario's own configuration is invalid.
    #[error("invalid lock configuration: {0}")]
    Config(#[from] ConfigError),
    /// The script could not reach a point it needs (e.g. a worker never
    /// acquired); the run proves nothing.
    #[error("scenario could not proceed: {0}")]
    Stuck(String),
}

/// A scripted failure scenario.
pub trait Scenario: Send + Sync {
    /// The kebab-case name used everywhere.
    fn name(&self) -> &'static str;

    /// What it tests, in one paragraph.
    fn describe(&self) -> &'static str;

    /// The properties this scenario is built to exercise (the ones its
    /// mutants are expected to violate).
    fn targets(&self) -> &'static [Property];

    /// The world and lock configuration it runs with.
    fn setup(&self) -> Setup;

    /// Parameters beyond the setup's, documented.
    fn params(&self) -> Vec<Param> {
        Vec::new()
    }

    /// The fault schedule a replay must pass along (exploration's
    /// `random-faults` only); `None` for scripted scenarios.
    fn replay_schedule(&self) -> Option<String> {
        None
    }

    /// The script.
    fn run(&self, stage: &mut Stage<'_>) -> Result<(), ScenarioError>;
}
