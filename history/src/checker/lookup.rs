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

use std::collections::BTreeMap;

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

/// [`writes_of`] for every (owner, fence) at once, in one pass: for a rule
/// that looks up the write behind each of many records (looking each up
/// with a pass over every op was quadratic).
pub(super) fn writes_by_token(history: &History) -> BTreeMap<(&str, i64), Vec<&Op>> {
    let mut writes: BTreeMap<(&str, i64), Vec<&Op>> = BTreeMap::new();
    for op in &history.ops {
        if let (OpKind::Write { fence, .. }, Some(owner)) = (&op.kind, op.owner.as_deref()) {
            writes.entry((owner, *fence)).or_default().push(op);
        }
    }
    for ops in writes.values_mut() {
        ops.sort_by_key(|op| op.id);
    }
    writes
}

/// The write op most likely behind `record`: the latest one invoked by the
/// record's commit time (plus tolerance, since the store may keep its own
/// clock), else the earliest one.
pub(super) fn write_for<'h>(history: &'h History, record: &FenceRecord) -> Option<&'h Op> {
    let writes = writes_of(history, &record.owner, record.fence);
    pick_write(&writes, record, history.limits.tolerance_ms)
}

/// [`write_for`] among `writes`, the record's owner's writes with its
/// fence in id order ([`writes_of`], or an entry of [`writes_by_token`]).
pub(super) fn pick_write<'h>(
    writes: &[&'h Op],
    record: &FenceRecord,
    tolerance_ms: u64,
) -> Option<&'h Op> {
    let commit_bound_ms = record.at_ms.saturating_add(tolerance_ms);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::OkValue as V;

    use super::super::testing::builder;

    #[test]
    fn writes_by_token_is_writes_of_for_every_token() {
        let history = builder()
            .acquired("w0", "a", (0, 10), 1)
            .write("w0", "a", 1, None, (20, 30), V::WriteAccepted)
            .acquired("w1", "b", (40, 50), 2)
            .write("w1", "b", 2, None, (60, 70), V::WriteAccepted)
            .write("w0", "a", 1, None, (80, 90), V::WriteNotFound)
            .write("w1", "b", 0, None, (100, 110), V::WriteAccepted)
            .build();
        let index = writes_by_token(&history);
        assert_eq!(index.len(), 3, "a/1, b/2 and b/0");
        for (&(owner, fence), ops) in &index {
            assert_eq!(ops, &writes_of(&history, owner, fence), "{owner}/{fence}");
        }
        assert_eq!(index[&("a", 1)].len(), 2);
        assert!(writes_of(&history, "a", 2).is_empty());
    }
}
