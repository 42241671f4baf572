//! The fenced store contract: what storage must do for fencing to protect it.
//!
//! A lock alone cannot stop a paused worker from writing after its lease
//! ended; only the storage can, by refusing any write whose fence is not
//! greater than the last one it accepted. This trait is that contract, so the
//! Postgres store here and the simulated store in `redfence-sim` are
//! interchangeable behind the worker flow and the harness.

use async_trait::async_trait;

use crate::error::{InvalidInput, StoreError};
use crate::fence::Fence;
use crate::owner::OwnerToken;
use crate::resource::ResourceName;

/// Longest accepted job id, in bytes.
pub const JOB_ID_LEN_MAX: usize = 200;

/// An idempotency key: one job's effect is applied at most once.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(String);

impl JobId {
    /// Validates: 1..=200 bytes, no control characters.
    pub fn new(id: impl Into<String>) -> Result<Self, InvalidInput> {
        let id = id.into();
        if id.is_empty() || id.len() > JOB_ID_LEN_MAX || id.chars().any(char::is_control) {
            return Err(InvalidInput::JobId);
        }
        Ok(Self(id))
    }

    /// The id text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for JobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One fenced write: set `value` on `resource` if `fence` is newer than the last accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FencedWrite {
    /// Target resource.
    pub resource: ResourceName,
    /// Fence of the writer's lease.
    pub fence: Fence,
    /// Writer's owner token (for the log).
    pub owner: OwnerToken,
    /// New value.
    pub value: String,
}

/// A job's write: a fenced write plus the job's idempotency key, applied
/// together so that a redelivered job cannot apply twice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobWrite {
    /// Idempotency key.
    pub job_id: JobId,
    /// The fenced write itself.
    pub write: FencedWrite,
}

/// What the single-statement fenced update did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Written; `last_fence` is now this write's fence.
    Accepted,
    /// Refused: a write with fence `last_fence` (≥ this one) was accepted before.
    Stale {
        /// The resource's current fence.
        last_fence: i64,
    },
    /// No such resource.
    NotFound,
}

/// What applying a job did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobOutcome {
    /// Fence accepted, effect applied and completion recorded, in one transaction.
    Applied,
    /// The job was completed before (redelivery): nothing applied.
    AlreadyDone,
    /// Refused as stale; nothing applied.
    Stale {
        /// The resource's current fence.
        last_fence: i64,
    },
    /// No such resource.
    NotFound,
}

/// The outcome recorded in the fence log: the history's own type, so the
/// store's log is ground truth without a conversion.
pub use redfence_history::FenceOutcome;

/// One row of the append-only fence log, in commit order (`seq`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FenceLogEntry {
    /// Position in the log; strictly increasing.
    pub seq: i64,
    /// Resource name.
    pub resource: String,
    /// Fence the write carried.
    pub fence: i64,
    /// Writer's owner token.
    pub owner: String,
    /// Job id, for job writes.
    pub job_id: Option<String>,
    /// What happened.
    pub outcome: FenceOutcome,
    /// Milliseconds since the Unix epoch (store clock).
    pub at_ms: i64,
    /// The same in microseconds, where the store keeps them (PostgreSQL);
    /// `None` for a store whose clock is in milliseconds (the simulated
    /// one). A real run compares this time with Redis's, taken from
    /// another server at microseconds: both must be moved onto the run's
    /// clock at that precision, or rounding alone can put a commit a
    /// millisecond after a deletion that followed it.
    pub at_us: Option<i64>,
}

impl FenceLogEntry {
    /// The entry as the history's store record, its time moved onto the run's
    /// clock: `at_ms - run_start_ms` (0 if the entry predates the run).
    pub fn into_record(self, run_start_ms: i64) -> redfence_history::FenceRecord {
        redfence_history::FenceRecord {
            seq: self.seq,
            at_ms: u64::try_from(self.at_ms.saturating_sub(run_start_ms)).unwrap_or(0),
            resource: self.resource,
            fence: self.fence,
            owner: self.owner,
            job_id: self.job_id,
            outcome: self.outcome,
        }
    }

    /// [`FenceLogEntry::into_record`] for a run whose start is known in
    /// microseconds: the time is moved at that precision, then cut to the
    /// millisecond (`at_ms` where the store has no microseconds).
    pub fn into_record_us(self, run_start_us: i64) -> redfence_history::FenceRecord {
        let at_ms = match self.at_us {
            Some(at_us) => at_us.saturating_sub(run_start_us).div_euclid(1_000),
            None => self.at_ms.saturating_sub(run_start_us.div_euclid(1_000)),
        };
        redfence_history::FenceRecord {
            at_ms: u64::try_from(at_ms).unwrap_or(0),
            ..self.into_record(0)
        }
    }
}

/// Storage that validates fences. See the module doc.
#[async_trait]
pub trait FencedStore: Send + Sync {
    /// Creates the resource (value `""`, `last_fence` 0) if absent.
    async fn ensure_resource(&self, resource: &ResourceName) -> Result<(), StoreError>;

    /// Single-statement fenced update, telling stale apart from not found.
    async fn write_fenced(&self, write: &FencedWrite) -> Result<WriteOutcome, StoreError>;

    /// Fence check, effect and idempotent completion in one transaction.
    async fn apply_job(&self, job: &JobWrite) -> Result<JobOutcome, StoreError>;

    /// Whether `job_id` has completed.
    async fn is_completed(&self, job_id: &JobId) -> Result<bool, StoreError>;

    /// The resource's current value and fence, if it exists.
    async fn read(&self, resource: &ResourceName) -> Result<Option<(String, i64)>, StoreError>;

    /// The fence log of one resource, in commit order.
    async fn fence_log(&self, resource: &ResourceName) -> Result<Vec<FenceLogEntry>, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(at_ms: i64, at_us: Option<i64>) -> FenceLogEntry {
        FenceLogEntry {
            seq: 1,
            resource: "r".into(),
            fence: 0,
            owner: "o".into(),
            job_id: None,
            outcome: FenceOutcome::Accepted,
            at_ms,
            at_us,
        }
    }

    #[test]
    fn a_commit_before_a_deletion_stays_before_it_on_the_run_clock() {
        // The run started at 1000.9 ms; a commit at 2685.0 ms, then a
        // deletion on another server at 2685.5 ms (1684.6 ms into the run:
        // 1684 on the run's millisecond clock). Milliseconds on both sides
        // would give the commit 2685 - 1000 = 1685, after the deletion.
        let start_us = 1_000_900;
        assert_eq!(entry(2_685, None).into_record(1_000).at_ms, 1_685);
        assert_eq!(
            entry(2_685, Some(2_685_000)).into_record_us(start_us).at_ms,
            1_684
        );
        // A store without microseconds falls back to milliseconds.
        assert_eq!(entry(2_685, None).into_record_us(start_us).at_ms, 1_685);
        // Before the run: 0.
        assert_eq!(entry(0, Some(10)).into_record_us(start_us).at_ms, 0);
    }
}
