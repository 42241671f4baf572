//! Finding the client ops that correspond to a store record, and telling
//! fenced writes from unfenced ones.
//!
//! The fence log names owner and fence but no op id; slices and the
//! fail-closed rule need the write op behind a record. Matching is by owner
//! and fence, which identify one acquisition's writes.
//!
//! A write carries a fence when its fence is positive: fences are positive
//! (redfence-core's `Fence` refuses anything else), a lock that issues none
//! writes with 0 (the harness records a write under a lease without a fence
//! as fence 0). The fence properties (`fence-order`, `stale-owner-rejected`)
//! judge fenced writes; `unfenced-stale-write` judges the others.

use crate::history::{FenceRecord, History, Op, OpKind};

/// Whether a write with `fence` carried no fence (see the module doc).
pub(super) fn unfenced(fence: i64) -> bool {
    fence <= 0
}

/// Write ops carrying `owner` and `fence`, in id order.
pub(super) fn writes_of<'h>(history: &'h History, owner: &str, fence: i64) -> Vec<&'h Op> {
    let mut ops: Vec<&Op> = history
        .ops
        .iter()
        .filter(|op| op.is_owner(owner))
        .filter(|op| matches!(op.kind, OpKind::Write { fence: f, .. } if f == fence))
        .collect();
    ops.sort_by_key(|op| op.id);
    ops
}

/// The write op most likely behind `record`: the latest one invoked by the
/// record's commit time (plus tolerance, since the store may keep its own
/// clock), else the earliest one.
pub(super) fn write_for<'h>(history: &'h History, record: &FenceRecord) -> Option<&'h Op> {
    let writes = writes_of(history, &record.owner, record.fence);
    let commit_bound_ms = record.at_ms.saturating_add(history.limits.tolerance_ms);
    writes
        .iter()
        .copied()
        .filter(|op| op.invoke_ms <= commit_bound_ms)
        .max_by_key(|op| (op.invoke_ms, op.id))
        .or_else(|| writes.first().copied())
}

/// The job a record completes: its own job id, else the job id every write op
/// behind it carries (a plain fenced write logs none, but the worker knew).
pub(super) fn job_of(history: &History, record: &FenceRecord) -> Option<String> {
    if let Some(job_id) = &record.job_id {
        return Some(job_id.clone());
    }
    let writes = writes_of(history, &record.owner, record.fence);
    let mut jobs = writes.iter().map(|op| match &op.kind {
        OpKind::Write { job_id, .. } => job_id.clone(),
        _ => unreachable!("writes_of returns writes only"),
    });
    let first = jobs.next()??;
    jobs.all(|job| job.as_deref() == Some(first.as_str()))
        .then_some(first)
}
