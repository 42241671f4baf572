//! redfence-core's store and fence-source traits over the adapter protocol:
//! the protected write becomes a `write` request, a store fence becomes a
//! `next-fence` request, and the harness performs both on the worker's own
//! PostgreSQL path.
//!
//! Why: the reference adapter must run `Worker::process` unchanged, and the
//! worker reaches storage only through [`FencedStore`] and fences only
//! through [`FenceSource`]. Implementing those two traits is the whole seam;
//! acquire, renewal, release and the mapping of the store's answers stay the
//! library's own.
//!
//! The protocol has a write and a fence and nothing else, so:
//! - `apply_job` is the `write` (owner = the lease's token, fence = its fence);
//! - `is_completed` answers `false`: the protocol has no such query, and the
//!   harness's write answers `already-done` for a completed job, which
//!   `apply_job` hands back as [`JobOutcome::AlreadyDone`] — the worker
//!   reports the same `already-done`, only after taking the lock;
//! - `ensure_resource` does nothing (the harness owns the row); the plain
//!   fenced write, `read` and `fence_log` are not part of the protocol and
//!   fail without sending anything.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use redfence_core::{
    Fence, FenceLogEntry, FenceSource, FenceSourceKind, FencedStore, FencedWrite, JobId,
    JobOutcome, JobWrite, LockError, ResourceName, StoreError, WriteOutcome,
};
use serde_json::json;

use crate::protocol::{Channel, Reply, RequestError};

/// How long a `written` may take before the write counts as indeterminate.
pub const WRITE_WAIT: Duration = Duration::from_secs(30);

/// How long a `fence` may take before the fence source fails.
pub const FENCE_WAIT: Duration = Duration::from_secs(30);

/// The harness's store, reached through `write` requests.
pub struct RemoteStore {
    channel: Arc<Channel>,
}

impl RemoteStore {
    /// A store over `channel`.
    pub fn new(channel: Arc<Channel>) -> Self {
        Self { channel }
    }
}

fn not_in_protocol(what: &str) -> StoreError {
    StoreError::NotSent(format!("{what} is not part of the adapter protocol"))
}

fn request_error(e: RequestError) -> StoreError {
    match e {
        RequestError::TooMany => StoreError::NotSent(format!(
            "{} requests already await a reply",
            crate::protocol::PENDING_MAX
        )),
        RequestError::NotSent(why) => StoreError::NotSent(why),
        RequestError::NoReply(wait) => StoreError::Timeout(wait),
    }
}

#[async_trait]
impl FencedStore for RemoteStore {
    async fn ensure_resource(&self, _resource: &ResourceName) -> Result<(), StoreError> {
        Ok(())
    }

    async fn write_fenced(&self, _write: &FencedWrite) -> Result<WriteOutcome, StoreError> {
        Err(not_in_protocol("a fenced write without a job"))
    }

    async fn apply_job(&self, job: &JobWrite) -> Result<JobOutcome, StoreError> {
        let request = json!({
            "type": "write",
            "job": job.job_id.as_str(),
            "owner": job.write.owner.as_str(),
            "fence": job.write.fence.get(),
        });
        let reply = self
            .channel
            .request(request, WRITE_WAIT)
            .await
            .map_err(request_error)?;
        let Reply::Written(written) = reply else {
            return Err(StoreError::Protocol("a fence reply to a write".into()));
        };
        match written.outcome.as_str() {
            "accepted" => Ok(JobOutcome::Applied),
            "already-done" => Ok(JobOutcome::AlreadyDone),
            "not-found" => Ok(JobOutcome::NotFound),
            "stale" => Ok(JobOutcome::Stale {
                last_fence: written.last_fence.ok_or_else(|| {
                    StoreError::Protocol("a stale write without last_fence".into())
                })?,
            }),
            "error" => {
                let detail = written.detail.unwrap_or_default();
                Err(if written.definite == Some(true) {
                    StoreError::Refused(detail)
                } else {
                    StoreError::OutcomeUnknown(detail)
                })
            }
            other => Err(StoreError::Protocol(format!(
                "unknown write outcome {other:?}"
            ))),
        }
    }

    async fn is_completed(&self, _job_id: &JobId) -> Result<bool, StoreError> {
        Ok(false)
    }

    async fn read(&self, _resource: &ResourceName) -> Result<Option<(String, i64)>, StoreError> {
        Err(not_in_protocol("reading the resource"))
    }

    async fn fence_log(&self, _resource: &ResourceName) -> Result<Vec<FenceLogEntry>, StoreError> {
        Err(not_in_protocol("reading the fence log"))
    }
}

/// Fences from the harness's durable counter (`fence_source: store`),
/// through `next-fence` requests.
pub struct RemoteFences {
    channel: Arc<Channel>,
}

impl RemoteFences {
    /// Fences over `channel`.
    pub fn new(channel: Arc<Channel>) -> Self {
        Self { channel }
    }
}

impl std::fmt::Debug for RemoteFences {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RemoteFences")
    }
}

#[async_trait]
impl FenceSource for RemoteFences {
    fn kind(&self) -> FenceSourceKind {
        FenceSourceKind::Store
    }

    async fn fence_for(
        &self,
        _resource: &ResourceName,
        _from_script: Option<Fence>,
    ) -> Result<Fence, LockError> {
        let reply = self
            .channel
            .request(json!({"type": "next-fence"}), FENCE_WAIT)
            .await
            .map_err(request_error)?;
        let Reply::Fence(reply) = reply else {
            return Err(LockError::Protocol("a written reply to next-fence".into()));
        };
        match (reply.fence, reply.error) {
            (_, Some(error)) => Err(LockError::FenceSource(StoreError::OutcomeUnknown(error))),
            (Some(fence), None) => {
                Fence::new(fence).map_err(|e| LockError::FenceSource(StoreError::InvalidInput(e)))
            }
            (None, None) => Err(LockError::Protocol(
                "a fence reply with neither fence nor error".into(),
            )),
        }
    }
}
